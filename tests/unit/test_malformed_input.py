"""Malformed znodes, everywhere the controller reads: each case gives a clear error naming the
path or field, Kafka's handling of the bad input where Kafka has one, a controller that keeps
serving, and nothing else lost. ``docs/reliability.md`` lists every case with its outcome and
the test behind it (cases covered elsewhere are listed there with their own tests; RPCs with
bad fields are in ``test_malformed_rpcs``).

Each case runs on the in-memory harness (``tests.harness``: the real controller over
``MemoryZooKeeper``), one bad input at a time next to a healthy topic
(``tests.harness.malformed.healthy_cluster``); ``tests/integration/test_malformed_live.py``
puts a mix of bad znodes into a live cluster on a real ZooKeeper with reference brokers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from controller.core.events import Reelect
from controller.core.model import TopicPartition
from controller.zk import paths
from controller.zk.errors import NoAuthError
from controller.zk.port import ReadResult
from tests.harness import ControllerHarness
from tests.harness.malformed import (
    CONTROLLER_ID,
    HEALTHY,
    errors,
    healthy_cluster,
    registration,
    snapshot,
    still_serving,
    still_serving_without,
    valid_registration,
)

# How the codecs refuse a payload over the ensemble's request limit.
TOO_LARGE = "znode limit (zookeeper.jute.maxbuffer)"


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = healthy_cluster()
    yield harness
    harness.close()


# -- /controller and /controller_epoch ----------------------------------------------------


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b'{"version":1,"brokerid":-1,"timestamp":"0"}', "'brokerid'"),
        (b'{"version":1,"brokerid":"1","timestamp":"0"}', "'brokerid'"),
        (b'{"version":1,"timestamp":"0"}', "'brokerid'"),
        (b'{"version":2,"brokerid":1,"kraftControllerEpoch":"7"}', "'kraftControllerEpoch'"),
    ],
    ids=["negative-id", "id-a-string", "missing-id", "kraft-epoch-a-string"],
)
def test_an_unreadable_controller_znode_blocks_the_election_until_it_goes(
    data: bytes, words: str
) -> None:
    """Someone holds /controller but it cannot be read: no election (Kafka throws on every
    read), logged with the field; the watch stays armed and its deletion brings one."""
    h = ControllerHarness(controller_id=CONTROLLER_ID)
    h.register_broker(1)
    h.admin.create(paths.CONTROLLER, data)
    with capture_logs() as logs:
        h.start()
    assert not h.controller.is_active
    assert any(words in str(e.get("error", "")) for e in errors(logs, paths.CONTROLLER))
    h.admin.delete(paths.CONTROLLER)
    h.drain()
    assert h.controller.is_active
    h.close()


@pytest.mark.parametrize("data", [b"-1", b"five", b"", b"1.5", b" 3"])
def test_an_unreadable_controller_epoch_fails_the_election_and_it_is_retried(
    data: bytes,
) -> None:
    h = ControllerHarness(controller_id=CONTROLLER_ID)
    h.register_broker(1)
    h.admin.create(paths.CONTROLLER_EPOCH, data)
    with capture_logs() as logs:
        h.start()
    assert not h.controller.is_active
    assert any(paths.CONTROLLER_EPOCH in str(e) for e in logs if e["log_level"] == "error")
    assert h.controller.scheduler.pending() == ["reelect"]  # retried after a backoff
    h.admin.set(paths.CONTROLLER_EPOCH, b"7")
    h.put(Reelect())  # what the retry timer queues
    h.drain()
    assert h.controller.is_active and h.ctx.epoch == 8
    h.close()


# -- /brokers/ids/N ------------------------------------------------------------------------

BAD_REGISTRATIONS = {
    "invalid-json": (b'{"version":5,', "invalid JSON"),
    "not-an-object": (b"[1, 2]", "expected a JSON object"),
    "empty": (b"", "no data"),
    "version-0": (registration(4, version=0), "'version'"),
    "missing-endpoints": (registration(4, endpoints=None), "'endpoints'"),
    "endpoint-not-a-string": (registration(4, endpoints=[42]), "'endpoints[0]'"),
    "port-out-of-range": (
        registration(4, endpoints=["PLAINTEXT://h:70000"]),
        "'endpoints[0]'",
    ),
    # Past Python's 4300-digit int() limit: must be malformed, not a ValueError that fails
    # the whole broker change.
    "port-5000-digits": (
        registration(4, endpoints=["PLAINTEXT://h:" + "9" * 5000]),
        "'endpoints[0]'",
    ),
    "jmx-port-a-string": (registration(4, jmx_port="x"), "'jmx_port'"),
    "rack-a-number": (registration(4, rack=7), "'rack'"),
    "unknown-protocol": (
        registration(4, listener_security_protocol_map={"PLAINTEXT": "CARRIER_PIGEON"}),
        "listener_security_protocol_map",
    ),
    "features-wrong-shape": (registration(4, features={"f": 3}), "'features.f'"),
    "oversized": (b'{"version":5,"x":"' + b"a" * (1024 * 1024) + b'"}', TOO_LARGE),
}


@pytest.mark.parametrize(("data", "words"), BAD_REGISTRATIONS.values(), ids=list(BAD_REGISTRATIONS))
def test_a_new_broker_with_a_malformed_registration_is_left_out(
    h: ControllerHarness, data: bytes, words: str
) -> None:
    """Kafka fails the whole BrokerChange event on an undecodable registration (no broker
    change is processed at all); here only that broker is left out, named in the log."""
    before = snapshot(h)
    session = h.zk.open_session()
    with capture_logs() as logs:
        session.create(paths.broker_path(4), data, ephemeral=True)
        h.register_broker(6)  # a healthy broker joining at the same time
        h.drain()
    assert 4 not in h.ctx.live_broker_ids() and 6 in h.ctx.live_broker_ids()
    (logged,) = errors(logs, paths.broker_path(4))
    assert words in logged["error"]
    still_serving(h, (*before[:2], [1, 2, 3, 6]))


@pytest.mark.parametrize(
    "changes",
    [{"version": 100}, {"timestamp": None}, {"timestamp": 5}, {"timestamp": "9" * 5000}],
    ids=["version-100", "no-timestamp", "timestamp-a-number", "timestamp-5000-digits"],
)
def test_a_registration_kafka_reads_brings_the_broker_in(
    h: ControllerHarness, changes: dict[str, Any]
) -> None:
    """Kafka's BrokerIdZNode.decode reads a later version as the newest format it knows and
    never reads ``timestamp``: such a broker joins (it used to be left out as malformed)."""
    session = h.zk.open_session()
    with capture_logs() as logs:
        session.create(paths.broker_path(4), registration(4, **changes), ephemeral=True)
        h.drain()
    assert 4 in h.ctx.live_broker_ids()
    assert not errors(logs, paths.broker_path(4))
    still_serving(h, (*snapshot(h)[:2], [1, 2, 3, 4]))


def test_a_repaired_registration_brings_the_broker_in(h: ControllerHarness) -> None:
    session = h.zk.open_session()
    session.create(paths.broker_path(4), b"{oops", ephemeral=True)
    h.drain()
    assert 4 not in h.ctx.live_broker_ids()
    session.set(paths.broker_path(4), valid_registration(4))
    h.drain()
    assert 4 in h.ctx.live_broker_ids()
    still_serving(h)


@pytest.mark.parametrize("name", ["-1", "007", "+3", "abc", "4294967296", " 4"])
def test_a_registration_under_a_name_that_is_not_a_broker_id_is_ignored(
    h: ControllerHarness, name: str
) -> None:
    """Kafka parses child names with ``toInt``: "-1" becomes a broker -1 (listed as live in
    every UpdateMetadata), "abc" fails the whole event. Here both are logged and skipped."""
    before = snapshot(h)
    session = h.zk.open_session()
    with capture_logs() as logs:
        session.create(f"{paths.BROKERS_IDS}/{name}", valid_registration(4), ephemeral=True)
        h.register_broker(6)
        h.drain()
    assert h.ctx.live_broker_ids() == {1, 2, 3, 6}
    assert errors(logs, f"{paths.BROKERS_IDS}/{name}")
    still_serving(h, (*before[:2], [1, 2, 3, 6]))


def test_a_live_broker_whose_registration_turns_malformed_stays_live(
    h: ControllerHarness,
) -> None:
    """A registration rewritten with bad data (same session, same epoch) is ignored: the
    broker keeps its last good registration and its partitions, even when another broker's
    change makes the controller re-read every registration."""
    before = snapshot(h)
    session = h.broker_sessions[1]
    with capture_logs() as logs:
        session.set(paths.broker_path(1), b'{"version":5,"endpoints":"nope"}')
        h.drain()  # BrokerModifications(1): logged, ignored
        h.register_broker(6)  # BrokerChange: re-reads every registration
        h.drain()
    assert errors(logs, paths.broker_path(1))
    assert h.ctx.live_broker_ids() == {1, 2, 3, 6}
    still_serving(h, (*before[:2], [1, 2, 3, 6]))


def test_a_registration_unreadable_at_failover_is_watched_for_its_repair() -> None:
    h = ControllerHarness(controller_id=CONTROLLER_ID)
    for b in (1, 2):
        h.register_broker(b)
    session = h.zk.open_session()
    session.ensure_path(paths.BROKERS_IDS)
    session.create(paths.broker_path(3), b'{"version":5}', ephemeral=True)
    with capture_logs() as logs:
        h.start()
    assert h.ctx.live_broker_ids() == {1, 2}
    (logged,) = errors(logs, paths.broker_path(3))
    assert "'endpoints'" in logged["error"] or "'jmx_port'" in logged["error"]
    session.set(paths.broker_path(3), valid_registration(3))
    h.drain()
    assert h.ctx.live_broker_ids() == {1, 2, 3}
    still_serving(h)


def test_a_broker_that_reregisters_unreadable_is_failed_then_joins_once_repaired(
    h: ControllerHarness,
) -> None:
    """A new registration (new epoch: the broker restarted or its session expired) that
    cannot be read: the old incarnation is gone and the new one cannot be reached, so the
    broker is failed; it joins when its registration is repaired (simulation seed 145)."""
    h.kill_broker(1)
    session = h.zk.open_session()
    session.create(paths.broker_path(1), b"{oops", ephemeral=True)
    h.drain()
    assert h.ctx.live_broker_ids() == {2, 3}
    state = h.zk_state(HEALTHY)
    assert state is not None and state.leader_and_isr.leader == 2
    session.set(paths.broker_path(1), valid_registration(1))
    h.drain()
    assert h.ctx.live_broker_ids() == {1, 2, 3}
    still_serving(h)


# -- /brokers/topics/T ---------------------------------------------------------------------


def topic_doc(**changes: Any) -> bytes:
    doc: dict[str, Any] = {
        "version": 3,
        "topic_id": "pL9sH1X2QfGkT4a1b2c3dA",
        "partitions": {"0": [1, 2]},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return json.dumps(doc).encode()


BAD_TOPICS = {
    "invalid-json": (b'{"version":3,"partitions":', "invalid JSON"),
    "empty": (b"", "no data"),
    "not-an-object": (b'"t"', "expected a JSON object"),
    "partitions-a-list": (topic_doc(partitions=[[1, 2]]), "'partitions'"),
    "negative-partition": (topic_doc(partitions={"-1": [1]}), "negative partition id"),
    "non-canonical-partition": (topic_doc(partitions={"01": [1]}), "not a non-negative"),
    "replicas-not-a-list": (topic_doc(partitions={"0": 1}), "'partitions.0'"),
    "negative-broker-id": (topic_doc(partitions={"0": [1, -1]}), "'partitions.0[1]'"),
    "broker-id-a-string": (topic_doc(partitions={"0": ["1"]}), "'partitions.0[0]'"),
    "broker-id-a-boolean": (topic_doc(partitions={"0": [True]}), "'partitions.0[0]'"),
    "duplicate-broker-id": (topic_doc(partitions={"0": [1, 2, 1]}), "duplicate broker id 1"),
    "broker-id-too-large": (topic_doc(partitions={"0": [2**31]}), "'partitions.0[0]'"),
    "bad-topic-id": (topic_doc(topic_id="not-a-uuid"), "'topic_id'"),
    "adding-not-an-object": (topic_doc(adding_replicas=[4]), "'adding_replicas'"),
    "oversized": (topic_doc(pad="x" * (1024 * 1024)), TOO_LARGE),
}


@pytest.mark.parametrize(("data", "words"), BAD_TOPICS.values(), ids=list(BAD_TOPICS))
def test_a_malformed_new_topic_is_skipped_and_the_others_are_created(
    h: ControllerHarness, data: bytes, words: str
) -> None:
    """Kafka reads an undecodable topic znode as an empty assignment (invalid JSON) or fails
    the whole TopicChange (wrong types: Jackson throws), losing the other new topics. Here the
    bad topic is skipped, named with the field, and the topics created with it come online;
    once repaired, it is created (its znode stays watched)."""
    before = snapshot(h)
    with capture_logs() as logs:
        h.admin.create(paths.topic_path("bad"), data)
        h.create_topic("good", {0: [2, 3]}, in_context=False)
        h.drain()
    (logged,) = errors(logs, paths.topic_path("bad"))
    assert words in logged["error"]
    assert h.zk_state(TopicPartition("bad", 0)) is None
    assert h.zk_state(TopicPartition("good", 0)) is not None
    h.admin.set(paths.topic_path("bad"), topic_doc())  # repaired
    h.drain()
    repaired = h.zk_state(TopicPartition("bad", 0))
    assert repaired is not None and repaired.leader_and_isr.leader == 1
    still_serving(h, before)


@pytest.mark.parametrize(
    "data",
    [topic_doc(version=None), topic_doc(version=4), topic_doc(version="3")],
    ids=["no-version", "version-4", "version-a-string"],
)
def test_a_topic_znode_kafka_reads_without_its_version_is_created(
    h: ControllerHarness, data: bytes
) -> None:
    """Kafka's TopicZNode.decode never reads ``version``: a tool that writes none (or another
    one) gets its topic created, as against Kafka."""
    h.admin.create(paths.topic_path("t"), data)
    h.drain()
    state = h.zk_state(TopicPartition("t", 0))
    assert state is not None and state.leader_and_isr.leader == 1
    assert h.ctx.topic_ids["t"] == "pL9sH1X2QfGkT4a1b2c3dA"


def test_a_topic_znode_without_partitions_is_a_topic_without_partitions(
    h: ControllerHarness,
) -> None:
    """As Kafka: no ``partitions`` is an empty assignment, not an error; the partitions are
    created when a later write lists them."""
    with capture_logs() as logs:
        h.admin.create(paths.topic_path("t"), topic_doc(partitions=None))
        h.drain()
    assert not errors(logs, paths.topic_path("t"))
    assert "t" in h.ctx.all_topics and h.zk_state(TopicPartition("t", 0)) is None
    h.admin.set(paths.topic_path("t"), topic_doc())
    h.drain()
    state = h.zk_state(TopicPartition("t", 0))
    assert state is not None and state.leader_and_isr.leader == 1


def test_a_new_topic_the_session_may_not_read_is_logged_and_the_others_are_created(
    h: ControllerHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A topic znode whose ACL refuses the controller (Kafka's read throws, failing the whole
    TopicChange): named in an error, left out; the topics created with it come online."""
    locked = paths.topic_path("locked")
    inner = h.port.inner

    def refusing(read: Any) -> Any:
        def reads(paths_: list[str], *watch: Any) -> list[ReadResult]:
            results = read(paths_, *watch)
            return [ReadResult(r.path, error=NoAuthError(r.path)) if r.path == locked else r
                    for r in results]  # fmt: skip
        return reads

    monkeypatch.setattr(inner, "get_many", refusing(inner.get_many))
    monkeypatch.setattr(inner, "get_many_watched", refusing(inner.get_many_watched))
    before = snapshot(h)
    with capture_logs() as logs:
        h.admin.create(locked, topic_doc())
        h.create_topic("good", {0: [2, 3]}, in_context=False)
        h.drain()
    (logged,) = errors(logs, locked)
    assert logged["event"] == "cannot read topic znode"
    assert h.zk_state(TopicPartition("locked", 0)) is None
    assert h.zk_state(TopicPartition("good", 0)) is not None
    still_serving(h, before)


def test_a_malformed_rewrite_of_an_existing_topic_changes_nothing(h: ControllerHarness) -> None:
    """PartitionModifications on an undecodable znode: logged, nothing changes, the watch is
    re-armed so the next (valid) partition addition is seen."""
    state = h.zk_state(HEALTHY)
    with capture_logs() as logs:
        h.admin.set(paths.topic_path("healthy"), b'{"version":3,"partitions":{"0":"1,2"}}')
        h.drain()
    (logged,) = errors(logs, paths.topic_path("healthy"))
    assert "'partitions.0'" in logged["error"]
    assert h.zk_state(HEALTHY) == state
    assert h.ctx.partition_replica_assignment(HEALTHY) == (1, 2)
    h.admin.set(paths.topic_path("healthy"), topic_doc(partitions={"0": [1, 2], "1": [3, 2]}))
    h.drain()
    added = h.zk_state(TopicPartition("healthy", 1))
    assert added is not None and added.leader_and_isr.leader == 3
    still_serving(h)


def test_a_topic_malformed_at_failover_does_not_stop_the_failover() -> None:
    h = ControllerHarness(controller_id=CONTROLLER_ID)
    for b in (1, 2, 3):
        h.register_broker(b)
    h.create_topic("healthy", {0: [1, 2]}, in_context=False)
    h.admin.create(paths.topic_path("bad"), b"{oops")
    with capture_logs() as logs:
        h.start()
    assert errors(logs, paths.topic_path("bad"))
    assert h.zk_state(HEALTHY) is not None
    assert h.ctx.partition_replica_assignment(HEALTHY) == (1, 2)
    still_serving(h)


def test_an_existing_topic_unreadable_at_failover_is_taken_over_once_repaired(
    h: ControllerHarness,
) -> None:
    """The next controller finds the topic znode of a live topic unreadable: the topic is
    skipped. Once repaired, its partitions look new; creating them would find their state
    znodes and fail for good (Kafka: until another failover), leaving them unmanaged. They are
    taken over with their existing state, and elected again when their leader dies."""
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.drain()
    tp = TopicPartition("t", 0)
    good = h.read(paths.topic_path("t"))
    state = h.zk_state(tp)
    h.admin.set(paths.topic_path("t"), b"{oops")
    h.zk.expire(h.port.inner, reconnect=True)  # a new election and failover
    h.drain()
    assert h.ctx.partition_leadership_info(tp) is None
    h.admin.set(paths.topic_path("t"), good or b"")
    h.drain()
    assert h.ctx.partition_leadership_info(tp) == state
    assert h.zk_state(tp) == state  # taken over as it was, not re-created
    h.kill_broker(1)
    h.drain()
    after = h.zk_state(tp)
    assert after is not None and after.leader_and_isr.leader == 2
    still_serving_without(h, {1})


@pytest.mark.parametrize(
    ("replicas", "why"),
    [([7, 8], "No assigned replica is alive"), ([], "No assigned replica is alive")],
    ids=["unknown-brokers", "no-replicas"],
)
def test_a_partition_on_unknown_brokers_waits_offline(
    h: ControllerHarness, replicas: list[int], why: str
) -> None:
    """Valid JSON naming brokers that never registered (Kafka accepts them: brokers may come
    later), or no broker at all: the partition stays NewPartition, logged, and comes online
    when one of its brokers registers."""
    before = snapshot(h)
    with capture_logs() as logs:
        h.admin.create(paths.topic_path("later"), topic_doc(partitions={"0": replicas}))
        h.drain()
    assert h.zk_state(TopicPartition("later", 0)) is None
    assert any(why in str(e.get("error", "")) for e in logs)
    if replicas:
        h.register_broker(7)
        h.drain()
        state = h.zk_state(TopicPartition("later", 0))
        assert state is not None and state.leader_and_isr.leader == 7
    still_serving(h, (*before[:2], sorted(h.ctx.live_broker_ids())))


def test_a_rewrite_of_existing_replica_lists_is_ignored(h: ControllerHarness) -> None:
    """Valid JSON changing an existing partition's replicas (not through a reassignment):
    ignored, as Kafka does (pitfall 13); the controller keeps the assignment it knows."""
    before = snapshot(h)
    h.admin.set(paths.topic_path("healthy"), topic_doc(partitions={"0": [3, 2]}))
    h.drain()
    assert h.ctx.partition_replica_assignment(HEALTHY) == (1, 2)
    assert h.zk_state(HEALTHY) == before[1]
    still_serving(h)


# -- /brokers/topics/T/partitions/P/state --------------------------------------------------


def state_doc(**changes: Any) -> bytes:
    doc: dict[str, Any] = {
        "controller_epoch": 1,
        "leader": 1,
        "version": 1,
        "leader_epoch": 0,
        "isr": [1, 2],
    }
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return json.dumps(doc).encode()


BAD_STATES = {
    "invalid-json": (b'{"leader":1,', "invalid JSON"),
    "empty": (b"", "LeaderAndIsr information doesn't exist"),
    "leader-a-string": (state_doc(leader="1"), "'leader'"),
    "negative-leader": (state_doc(leader=-5), "'leader'"),
    "missing-leader-epoch": (state_doc(leader_epoch=None), "'leader_epoch'"),
    "negative-leader-epoch": (state_doc(leader_epoch=-1), "'leader_epoch'"),
    "isr-not-a-list": (state_doc(isr=1), "'isr'"),
    "negative-isr-member": (state_doc(isr=[1, -2]), "'isr[1]'"),
    "duplicate-isr-member": (state_doc(isr=[1, 2, 2]), "duplicate broker id 2"),
    "unknown-recovery-state": (state_doc(leader_recovery_state=7), "'leader_recovery_state'"),
    "missing-controller-epoch": (state_doc(controller_epoch=None), "'controller_epoch'"),
    "oversized": (state_doc(pad="x" * (1024 * 1024)), TOO_LARGE),
}

TWO = TopicPartition("two", 0)


@pytest.fixture
def two(h: ControllerHarness) -> ControllerHarness:
    """Adds topic ``two`` {0: [1, 2], 1: [1, 2]}, both partitions led by broker 1."""
    h.create_topic("two", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    return h


@pytest.mark.parametrize(("data", "words"), BAD_STATES.values(), ids=list(BAD_STATES))
def test_a_malformed_state_fails_only_its_partition_in_an_election(
    two: ControllerHarness, data: bytes, words: str
) -> None:
    """The leader of two partitions dies; one state znode is unreadable. Kafka reads invalid
    JSON as "no state" and throws on wrong types (failing the election of every partition of
    the event). Here only that partition's election fails, naming the path and field; the
    other partition gets a new leader, and the bad znode is left as it is."""
    h = two
    bad_path = paths.partition_state_path("two", 0)
    h.admin.set(bad_path, data)
    with capture_logs() as logs:
        h.kill_broker(1)
        h.drain()
    assert h.read(bad_path) == data
    other = h.zk_state(TopicPartition("two", 1))
    assert other is not None and other.leader_and_isr.leader == 2
    healthy = h.zk_state(HEALTHY)
    assert healthy is not None and healthy.leader_and_isr.leader == 2
    failures = [e for e in logs if "two-0" in str(e.get("partition", ""))]
    assert any(words in str(e.get("error", "")) for e in failures), failures
    still_serving(h)


def test_a_state_naming_unknown_brokers_is_taken_as_written(two: ControllerHarness) -> None:
    """Valid JSON whose ISR names a broker that is not a replica (99): taken as written, as in
    Kafka. When the leader dies, only live replicas in the ISR can lead: none here, so the
    partition goes offline cleanly (the dead leader leaves the ISR); the others move on."""
    h = two
    bad_path = paths.partition_state_path("two", 0)
    current = h.zk_state(TWO)
    assert current is not None
    h.admin.set(bad_path, state_doc(isr=[1, 99], leader_epoch=current.leader_and_isr.leader_epoch))
    h.kill_broker(1)
    h.drain()
    after = h.zk_state(TWO)
    assert after is not None
    assert (after.leader_and_isr.leader, after.leader_and_isr.isr) == (-1, (99,))
    other = h.zk_state(TopicPartition("two", 1))
    assert other is not None and other.leader_and_isr.leader == 2
    still_serving_without(h, {1})


def test_a_state_malformed_at_failover_fails_only_its_partition() -> None:
    """At failover an unreadable state is skipped (logged with its path): that partition stays
    NewPartition (its creation finds the znode, as in Kafka for invalid JSON) until the state
    is repaired and a controller fails over; every other partition is loaded."""
    h = ControllerHarness(controller_id=CONTROLLER_ID)
    for b in (1, 2, 3):
        h.register_broker(b)
    h.create_topic("healthy", {0: [1, 2]}, in_context=False)
    h.create_topic("two", {0: [1, 2], 1: [2, 3]}, in_context=False)
    bad_path = paths.partition_state_path("two", 0)
    h.admin.create(bad_path, b'{"version":1,"leader":"one"}', makepath=True)
    with capture_logs() as logs:
        h.start()
    assert errors(logs, bad_path)
    assert h.ctx.partition_leadership_info(TopicPartition("two", 0)) is None
    assert h.zk_state(TopicPartition("two", 1)) is not None
    assert h.read(bad_path) == b'{"version":1,"leader":"one"}'
    still_serving(h)
    # Repaired, then picked up at the next failover (here: the session expires, the
    # controller is elected again and reloads everything).
    h.admin.set(bad_path, state_doc(controller_epoch=0))
    h.zk.expire(h.port.inner, reconnect=True)
    h.drain()
    assert h.controller.is_active and h.ctx.epoch == 2
    info = h.ctx.partition_leadership_info(TopicPartition("two", 0))
    assert info is not None and info.leader_and_isr.leader == 1


@pytest.mark.parametrize("version", [None, 2], ids=["no-version", "version-2"])
def test_a_state_kafka_reads_whatever_its_version_is_loaded_at_failover(
    version: int | None,
) -> None:
    """Kafka's TopicPartitionStateZNode.decode never reads ``version``. A state written
    without one used to be logged as malformed at failover; its partition then stayed
    NewPartition, and creating its state hit NODEEXISTS: offline until the next failover.
    Now it is the partition's state: its leader is kept and its epochs carry on."""
    h = ControllerHarness(controller_id=CONTROLLER_ID)
    for b in (1, 2, 3):
        h.register_broker(b)
    h.create_topic("healthy", {0: [1, 2]}, in_context=False)
    h.create_topic("two", {0: [1, 2], 1: [2, 3]}, in_context=False)
    path = paths.partition_state_path("two", 0)
    data = state_doc(version=version, leader=1, leader_epoch=5)
    h.admin.create(path, data, makepath=True)
    with capture_logs() as logs:
        h.start()
    assert not errors(logs, path)
    info = h.ctx.partition_leadership_info(TopicPartition("two", 0))
    assert info is not None
    assert (info.leader_and_isr.leader, info.leader_and_isr.leader_epoch) == (1, 5)
    assert h.read(path) == data
    # Its leader dies: elected from the state read, at the next leader epoch.
    h.kill_broker(1)
    h.drain()
    after = h.zk_state(TopicPartition("two", 0))
    assert after is not None
    assert (after.leader_and_isr.leader, after.leader_and_isr.leader_epoch) == (2, 6)
    still_serving_without(h, {1})


# -- /config/topics/T ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"not json", "invalid JSON"),
        (b'{"version":1,"config":{"unclean.leader.election.enable":true}}', "'config."),
        (b'{"version":1}', "'config'"),
    ],
    ids=["invalid-json", "value-not-a-string", "missing-config"],
)
def test_a_malformed_topic_config_fails_only_the_election_that_needs_it(
    h: ControllerHarness, data: bytes, words: str
) -> None:
    """The controller reads ``/config/topics/T`` only to decide an unclean election (no ISR
    member left). Kafka's getLogConfigs fails the topics it cannot read: their elections fail,
    the partition stays offline (the clean choice) and the others proceed."""
    h.create_topic("solo", {0: [1, 3]}, in_context=False)
    h.drain()
    solo = TopicPartition("solo", 0)
    state = h.zk_state(solo)
    assert state is not None and state.leader_and_isr.leader == 1
    h.admin.create(paths.topic_config_path("solo"), data, makepath=True)
    # Broker 3 leaves the ISR, then the leader dies: only an unclean election could help.
    h.kill_broker(3)
    h.drain()
    with capture_logs() as logs:
        h.kill_broker(1)
        h.drain()
    after = h.zk_state(solo)
    assert after is not None and after.leader_and_isr.leader == -1
    assert any(
        words in str(e.get("error", "")) and "solo-0" in str(e.get("partition", "")) for e in logs
    ), logs
    healthy = h.zk_state(HEALTHY)
    assert healthy is not None and healthy.leader_and_isr.leader == 2
    still_serving_without(h, {1, 3})
