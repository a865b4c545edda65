"""The chaos suite: real processes, real faults, and a live invariant checker.

``zk-controller chaos`` (and ``make chaos``) runs a 3-node ZooKeeper ensemble, three
controllers and five reference brokers on 127.0.0.1 under a steady stream of admin operations,
injects faults from a schedule drawn from a seed, and fails when any invariant of
``controller.invariants`` is violated. See ``docs/reliability.md`` (## Chaos).

Modules: ``cluster`` (the processes), ``sessions`` (server-side session expiry),
``workload`` (admin operations), ``faults`` (the injectors and the schedule), ``observe``
(ZooKeeper snapshots, broker Describe, log tailing), ``checker`` (the live checker),
``txnlog``/``audit`` (the post-run audit of ZooKeeper's transaction logs), ``runner`` and
``report``.
"""
