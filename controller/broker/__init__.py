"""The reference broker: a small, real broker process that a zk-controller can control.

It is the controller's test double and the template for teams writing their own broker in any
language (the contract is docs/broker-protocol.md). ``BrokerServer`` is the entry point.
"""

from controller.broker.registration import BrokerIdInUseError, BrokerRegistrar
from controller.broker.server import BrokerConfig, BrokerServer
from controller.broker.state import ReplicaState

__all__ = ["BrokerConfig", "BrokerIdInUseError", "BrokerRegistrar", "BrokerServer", "ReplicaState"]
