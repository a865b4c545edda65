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
    PartitionState,
    ReplicaState,
    TopicPartition,
)
from controller.zk import paths
from tests.harness import ControllerHarness, leadership

BROKER = 5
EPOCH = 50
TP = TopicPartition("t", 0)
STATE_PATH = paths.partition_state_path("t", 0)
REPLICA = PartitionAndReplica(TP, BROKER)

New = PartitionState.NewPartition
Online = PartitionState.OnlinePartition
Offline = PartitionState.OfflinePartition
NonExistent = PartitionState.NonExistentPartition

NewReplica = ReplicaState.NewReplica
OnlineReplica = ReplicaState.OnlineReplica
OfflineReplica = ReplicaState.OfflineReplica
DeletionStarted = ReplicaState.ReplicaDeletionStarted
DeletionSuccessful = ReplicaState.ReplicaDeletionSuccessful
DeletionIneligible = ReplicaState.ReplicaDeletionIneligible
NonExistentReplica = ReplicaState.NonExistentReplica

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
