"""Deterministic simulation of the controller core (reference §1-§4 under faults).

The real controller core -- ``Controller`` with its context, state machines, handlers and
event manager -- runs against an in-memory ZooKeeper (sessions, ephemerals, one-shot watches,
versions, multi) and simulated brokers applying Kafka's acceptance rules, all driven by one
seeded scheduler on virtual time. Random operation and fault schedules are checked against the
invariants of ``controller.invariants`` (shared with the live chaos suite) plus the
quiet-cluster checks of ``controller.sim.checks``. Any failure replays from its seed:

    .venv/bin/python -m controller.sim --seed 1234 --trace

Modules: ``world`` (the cluster and the scheduler), ``ops`` (operations and faults),
``zk`` (the observed ZooKeeper model and the controllers' sessions), ``channel`` (the
controller-to-broker channel and timers on virtual time), ``brokers`` (simulated brokers),
``observe`` (observations for the invariants), ``checks`` (quiet-cluster checks),
``runner`` (a whole seeded schedule, and the command line).
"""
