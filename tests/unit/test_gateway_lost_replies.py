"""Fenced state writes whose reply was lost: the client resent them after a connection loss
and the resend failed against the first attempt, which had committed (found by the chaos
suite, seed 1: a ZooKeeper leader stop during an AlterPartition ISR expansion).

The first attempt is played by ``FaultInjectingPort.before``: just before the gateway's
multi, the same write commits on the controller's own session; the multi then meets it as
BADVERSION (or NODEEXISTS for a create), as a resend would.
"""

from __future__ import annotations

from controller.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from controller.zk import codecs, paths
from controller.zk.errors import NodeExistsError
from controller.zk.gateway import ZkGateway
from controller.zk.memory import MemoryZooKeeper
from tests.harness.faults import FaultInjectingPort

TP = TopicPartition("t", 0)
STATE = paths.partition_state_path("t", 0)
EPOCH = 3


def _setup() -> tuple[ZkGateway, FaultInjectingPort, int]:
    zk = MemoryZooKeeper()
    session = zk.open_session()
    session.start()
    port = FaultInjectingPort(session)
    gateway = ZkGateway(port)  # type: ignore[arg-type]  # structurally a ZkPort
    port.create(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(EPOCH))
    epoch_version = port.exists(paths.CONTROLLER_EPOCH).version  # type: ignore[union-attr]
    port.ensure_path(paths.topic_partitions_path("t"))
    return gateway, port, epoch_version


def _encode(lai: LeaderAndIsr, controller_epoch: int = EPOCH) -> bytes:
    return codecs.encode_partition_state(LeaderIsrAndControllerEpoch(lai, controller_epoch))


def _with_state(gateway: ZkGateway, port: FaultInjectingPort, lai: LeaderAndIsr) -> None:
    port.ensure_path(paths.partition_path("t", 0))
    port.create(STATE, _encode(lai))


def test_update_whose_first_attempt_committed_is_written() -> None:
    gateway, port, epoch_version = _setup()
    _with_state(gateway, port, LeaderAndIsr(1, 4, (1, 2), partition_epoch=0))
    proposed = LeaderAndIsr(1, 4, (1, 2, 3), partition_epoch=0)
    port.before("multi_many", lambda: port.inner.set(STATE, _encode(proposed), 0))

    result = gateway.update_leader_and_isr({TP: proposed}, EPOCH, epoch_version)

    assert result.to_retry == set()
    assert result.finished == {TP: proposed.with_partition_epoch(1)}


def test_update_that_lost_to_another_write_is_retried() -> None:
    gateway, port, epoch_version = _setup()
    _with_state(gateway, port, LeaderAndIsr(1, 4, (1, 2), partition_epoch=0))
    proposed = LeaderAndIsr(1, 4, (1, 2, 3), partition_epoch=0)
    other = LeaderAndIsr(1, 4, (1,), partition_epoch=0)  # e.g. a shrink that won the race
    port.before("multi_many", lambda: port.inner.set(STATE, _encode(other), 0))

    result = gateway.update_leader_and_isr({TP: proposed}, EPOCH, epoch_version)

    assert result.to_retry == {TP}
    assert result.finished == {}


def test_same_content_from_another_controller_epoch_is_not_ours() -> None:
    gateway, port, epoch_version = _setup()
    _with_state(gateway, port, LeaderAndIsr(1, 4, (1, 2), partition_epoch=0))
    proposed = LeaderAndIsr(1, 4, (1, 2, 3), partition_epoch=0)
    port.before("multi_many", lambda: port.inner.set(STATE, _encode(proposed, EPOCH - 1), 0))

    result = gateway.update_leader_and_isr({TP: proposed}, EPOCH, epoch_version)

    assert result.to_retry == {TP}


def test_create_whose_first_attempt_committed_is_created() -> None:
    gateway, port, epoch_version = _setup()
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 0, (2, 3)), EPOCH)

    def first_attempt() -> None:
        port.inner.ensure_path(paths.partition_path("t", 0))
        port.inner.create(STATE, codecs.encode_partition_state(state))

    port.before("multi_many", first_attempt, when=lambda txns: any(
        getattr(op, "path", "") == STATE for txn in txns for op in txn
    ))  # fmt: skip

    assert gateway.create_topic_partition_states({TP: state}, epoch_version) == {TP: None}


def test_create_meeting_someone_elses_state_still_fails() -> None:
    gateway, port, epoch_version = _setup()
    _with_state(gateway, port, LeaderAndIsr(1, 0, (1,)))
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 0, (2, 3)), EPOCH)

    result = gateway.create_topic_partition_states({TP: state}, epoch_version)

    assert isinstance(result[TP], NodeExistsError)


def test_giving_up_controller_whose_delete_reply_was_lost_counts_as_done() -> None:
    """The unfenced delete of our own /controller is resent after a connection loss; when
    the first attempt had committed, the resend's NONODE means it is done, not "not ours"."""
    gateway, port, _ = _setup()
    port.create(paths.CONTROLLER, codecs.encode_controller(5, 0), ephemeral=True)
    port.before("delete", lambda: port.inner.delete(paths.CONTROLLER))

    assert gateway.delete_own_controller() is True
    assert port.exists(paths.CONTROLLER) is None
