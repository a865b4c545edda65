"""zk-controller: a ZooKeeper-backed controller for partitioned, replicated logs.

The package mirrors the split of Kafka's ZooKeeper-mode controller:

- ``controller.zk``        ZooKeeper access: paths, codecs, the fenced and batched gateway.
- ``controller.core``      the in-memory model, state machines, election algorithms, events.
- ``controller.handlers``  controller event handlers, split by concern.
- ``controller.channel``   controller -> broker requests (batching and per-broker senders).
- ``controller.broker``    the reference broker.
- ``controller.cli``       the ``zk-controller`` command.
"""

__version__ = "0.1.0"
