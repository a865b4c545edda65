"""The setting of Kafka's ``PartitionStateMachineTest`` and ``ReplicaStateMachineTest``:
controller 5 at controller epoch 50, one partition t-0, and the short names the four suites
use for states, request kinds and election strategies. The ``h`` fixture is in conftest.py."""

from __future__ import annotations

from typing import Any

from controller.channel.sender import RequestKind
from controller.core.election import (
    ControlledShutdownPartitionLeaderElectionStrategy,
    OfflinePartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
)
from controller.core.model import (
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    TopicPartition,
)
from controller.core.partition_state_machine import New, NonExistent, Offline, Online
from controller.core.replica_state_machine import (
    DeletionIneligible,
    DeletionStarted,
    DeletionSuccessful,
    NewReplica,
    NonExistentReplica,
    OfflineReplica,
    OnlineReplica,
)
from controller.zk import paths
from tests.harness import ControllerHarness, leadership

BROKER = 5
EPOCH = 50
TP = TopicPartition("t", 0)
STATE_PATH = paths.partition_state_path("t", 0)
REPLICA = PartitionAndReplica(TP, BROKER)

LAI = RequestKind.LEADER_AND_ISR
UMR = RequestKind.UPDATE_METADATA
SR = RequestKind.STOP_REPLICA

OFFLINE_STRATEGY = OfflinePartitionLeaderElectionStrategy(False)
PREFERRED = PreferredReplicaPartitionLeaderElectionStrategy()
CONTROLLED_SHUTDOWN = ControlledShutdownPartitionLeaderElectionStrategy()


def lice(*args: Any, controller_epoch: int = EPOCH, **kwargs: Any) -> LeaderIsrAndControllerEpoch:
    """``leadership(...)`` written by us (controller epoch 50) unless told otherwise."""
    return leadership(*args, controller_epoch=controller_epoch, **kwargs)


def assert_untouched(h: ControllerHarness, zxid: int) -> None:
    """No ZooKeeper write and no request since ``zxid`` was taken."""
    assert h.zxid == zxid
    assert h.channel.sent == []


# Re-exported: the state machines' own short names for states, with the setting above.
__all__ = [
    "BROKER",
    "CONTROLLED_SHUTDOWN",
    "EPOCH",
    "LAI",
    "OFFLINE_STRATEGY",
    "PREFERRED",
    "REPLICA",
    "SR",
    "STATE_PATH",
    "TP",
    "UMR",
    "DeletionIneligible",
    "DeletionStarted",
    "DeletionSuccessful",
    "New",
    "NewReplica",
    "NonExistent",
    "NonExistentReplica",
    "Offline",
    "OfflineReplica",
    "Online",
    "OnlineReplica",
    "assert_untouched",
    "lice",
]
