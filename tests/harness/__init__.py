"""A deterministic, in-memory controller harness for unit tests (and the simulator later).

It builds the real thing -- ``Controller`` with its gateway, context, state machines, request
batches and handlers -- over a ``MemoryZooKeeper`` and a ``RecordingChannel`` that records
every request instead of sending it. Nothing runs on a background thread: events are processed
on the test's thread, by ``process`` (directly) or ``drain`` (the queue, in FIFO order), so a
test is a plain sequence of steps and its outcome never depends on scheduling.

Three ways to reach a state, from the most to the least realistic::

    h = ControllerHarness(controller_id=1)
    h.register_broker(1); h.create_topic("t", {0: [1]})     # ZooKeeper only
    h.start()                                                # a real election and failover

    h = ControllerHarness(controller_id=5)
    h.become_controller(epoch=50)                            # /controller_epoch + context
    h.set_live_brokers([5, 6]); h.create_topic("t", {0: [5, 6]})
    h.set_leadership(TopicPartition("t", 0), leader=5, isr=[5, 6])   # state znode + cache
    h.psm.handle_state_changes(...)

    batch = h.new_batch()                                    # a batch on its own; the
    batch.new_batch(); ...; batch.send_requests_to_brokers(1)  # events go to h.batch_events

Observing: ``h.channel.requests(...)`` (what each broker was sent, in order), ``h.zk_state``/
``h.read`` (znodes, read through a separate admin session), ``h.ctx`` (the context) and
``h.state_changes()`` (the parsed state-change log). ``h.port``, the controller's ZooKeeper
session wrapped in a ``FaultInjectingPort``, makes chosen calls fail or runs an action just
before them (e.g. another writer racing the controller between its read and its write).

Everything written to ZooKeeper "by someone else" (brokers, admin tools, a rival controller)
goes through other sessions of the same ``MemoryZooKeeper``, exactly as on a real ensemble.

Modules: ``controller`` (``ControllerHarness``, ``leadership``), ``channel`` (``RecordingChannel``,
``SentRequest``, ``success_response``, ``make_broker``), ``faults`` (``FaultInjectingPort``).
"""

from tests.harness.channel import (
    CONTROLLER_PORT_BASE,
    PLAINTEXT_PORT_BASE,
    RecordingChannel,
    SentRequest,
    make_broker,
    success_response,
)
from tests.harness.controller import ControllerHarness, leadership
from tests.harness.faults import FaultInjectingPort, touches

__all__ = [
    "CONTROLLER_PORT_BASE",
    "PLAINTEXT_PORT_BASE",
    "ControllerHarness",
    "FaultInjectingPort",
    "RecordingChannel",
    "SentRequest",
    "leadership",
    "make_broker",
    "success_response",
    "touches",
]
