"""The benchmark suite (``zk-controller bench``): builds its own cluster and times the controller.

- ``populate``: Kafka's znodes for many topics, written with batched multis;
- ``simbroker``: light ``BrokerService`` endpoints, many per process, that record when they
  answered what (the controller, not the reference broker, is what is measured);
- ``cluster``: a local ZooKeeper, the broker host process and controller processes;
- ``scenarios``: failover, broker_failure, controlled_shutdown, create_topics,
  preferred_election, zk_baseline;
- ``report``: medians, spread, the table and the JSON document.
"""
