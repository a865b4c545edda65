"""Controller-level errors (not ZooKeeper's; those are in ``controller.zk.errors``)."""

from __future__ import annotations


class StateChangeFailedError(Exception):
    """A partition or replica could not make a requested transition (Kafka's
    ``StateChangeFailedException``): no eligible leader, a newer controller wrote the state,
    or the state znode is missing."""


class IllegalRequestBatchStateError(Exception):
    """A request batch was reused while it still held unsent requests (Kafka's
    ``IllegalStateException`` from ``newBatch``)."""
