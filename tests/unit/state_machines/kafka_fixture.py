"""The setting of Kafka's ``PartitionStateMachineTest`` and ``ReplicaStateMachineTest``:
controller 5 at controller epoch 50, one partition t-0. The ``h`` fixture is in conftest.py."""

from __future__ import annotations

from typing import Any

from controller.core.model import LeaderIsrAndControllerEpoch, TopicPartition
from tests.harness import ControllerHarness, leadership

BROKER = 5
EPOCH = 50
TP = TopicPartition("t", 0)


def lice(*args: Any, controller_epoch: int = EPOCH, **kwargs: Any) -> LeaderIsrAndControllerEpoch:
    """``leadership(...)`` written by us (controller epoch 50) unless told otherwise."""
    return leadership(*args, controller_epoch=controller_epoch, **kwargs)


def assert_untouched(h: ControllerHarness, zxid: int) -> None:
    """No ZooKeeper write and no request since ``zxid`` was taken."""
    assert h.zxid == zxid
    assert h.channel.sent == []
