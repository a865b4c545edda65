"""FencedWriter's split-and-retry (controller/zk/fenced.py) on the in-memory ZooKeeper: each
item gets its own result, and the number of multi rounds stays small when many items of a
batch fail (ZooKeeper names only the first failing op of a multi)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from controller.zk import codecs, limits, paths
from controller.zk.errors import (
    BadVersionError,
    ControllerMovedError,
    RequestTooLargeError,
    ZkError,
)
from controller.zk.fenced import MAX_ITEM_BYTES, FencedWriter
from controller.zk.memory import MemoryZooKeeper
from controller.zk.port import Op, OpResult, SetData, ZkPort


class CountingPort:
    """Counts multi rounds; ``lose_first_reply``: the first round commits, and is then sent
    again (a lost reply resent after a connection loss), meeting its own writes."""

    def __init__(self, inner: ZkPort, *, lose_first_reply: bool = False) -> None:
        self.inner = inner
        self.rounds = 0
        self._lose = lose_first_reply

    def multi_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[OpResult]]:
        self.rounds += 1
        if self._lose:
            self._lose = False
            self.inner.multi_many(transactions)
        return self.inner.multi_many(transactions)


def _nodes(count: int) -> tuple[ZkPort, int]:
    session = MemoryZooKeeper().open_session()
    session.start()
    session.create(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(1))
    session.ensure_path("/x")
    for i in range(count):
        session.create(f"/x/n{i}", b"v0")
    stat = session.exists(paths.CONTROLLER_EPOCH)
    assert stat is not None
    return session, stat.version


def _writes(count: int) -> dict[int, list[Op]]:
    return {i: [SetData(f"/x/n{i}", b"v1", 0)] for i in range(count)}


@pytest.mark.parametrize("count", [1, 7, 500, 2000])
def test_a_resent_batch_meeting_its_own_writes_takes_a_few_rounds(count: int) -> None:
    session, epoch_version = _nodes(count)
    port = CountingPort(session, lose_first_reply=True)
    results = FencedWriter(port, ops_per_multi=500).run(_writes(count), epoch_version)  # type: ignore[arg-type]
    assert all(isinstance(results[i], BadVersionError) for i in range(count))
    # One op failure named per multi; the rest retried in halves: ~log2(500) rounds, not 500.
    assert port.rounds <= 11


@pytest.mark.parametrize("failing", [{0}, {250}, {499}, {0, 3, 499}, set(range(0, 500, 7))])
def test_only_the_failing_items_fail_and_the_others_are_applied(failing: set[int]) -> None:
    session, epoch_version = _nodes(500)
    for i in failing:  # another writer got there first
        session.set(f"/x/n{i}", b"other", 0)
    port = CountingPort(session)
    results = FencedWriter(port, ops_per_multi=500).run(_writes(500), epoch_version)  # type: ignore[arg-type]
    for i in range(500):
        data, stat = session.get(f"/x/n{i}")
        if i in failing:
            assert isinstance(results[i], BadVersionError), i
            assert data == b"other"
        else:
            [own] = results[i]  # type: ignore[misc]
            assert own.ok and own.stat is not None and own.stat.version == stat.version == 1, i
            assert data == b"v1"
    assert port.rounds <= 2 + 2 * len(failing).bit_length() + len(failing)


def test_a_moved_epoch_fails_the_whole_run() -> None:
    session, epoch_version = _nodes(3)
    session.set(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(2), epoch_version)
    with pytest.raises(ControllerMovedError):
        FencedWriter(session).run(_writes(3), epoch_version)
    assert all(session.get(f"/x/n{i}")[0] == b"v0" for i in range(3))


def test_an_item_larger_than_a_request_may_be_is_refused_unsent() -> None:
    # Sent, it would make ZooKeeper drop the connection, and the port (resending on
    # connection loss for as long as the session lives) would hang the event thread.
    session, epoch_version = _nodes(3)
    port = CountingPort(session)
    writes = _writes(3)
    writes[1] = [SetData("/x/n1", b"x" * MAX_ITEM_BYTES, 0)]
    results = FencedWriter(port).run(writes, epoch_version)  # type: ignore[arg-type]
    refused = results[1]
    assert isinstance(refused, RequestTooLargeError) and refused.path == "/x/n1"
    assert "jute.maxbuffer" in str(refused)
    assert session.get("/x/n1")[0] == b"v0"
    # The others are written, in one round.
    assert [session.get(f"/x/n{i}")[0] for i in (0, 2)] == [b"v1", b"v1"]
    assert port.rounds == 1
    # The largest item that fits is still sent.
    fits = [SetData("/x/n1", b"x" * (MAX_ITEM_BYTES - 100), 0)]
    assert not isinstance(FencedWriter(port).run_one(fits, epoch_version), ZkError)


def test_a_raised_jute_maxbuffer_lets_larger_items_through() -> None:
    # An ensemble configured with jute.maxbuffer 4 MiB takes a 2 MiB topic znode; the
    # setting zookeeper.jute.maxbuffer tells the writer so (controller.zk.limits).
    session, epoch_version = _nodes(1)
    big = [SetData("/x/n0", b"x" * (2 * 1024 * 1024), 0)]
    assert isinstance(FencedWriter(session).run_one(big, epoch_version), RequestTooLargeError)
    limits.configure(4 * 1024 * 1024)
    try:
        assert not isinstance(FencedWriter(session).run_one(big, epoch_version), ZkError)
        too_big = [SetData("/x/n0", b"x" * (4 * 1024 * 1024), 1)]
        refused = FencedWriter(session).run_one(too_big, epoch_version)
        assert isinstance(refused, RequestTooLargeError)
        assert "zookeeper.jute.maxbuffer" in str(refused)
    finally:
        limits.configure(limits.DEFAULT_JUTE_MAXBUFFER)
    assert len(session.get("/x/n0")[0]) == 2 * 1024 * 1024
