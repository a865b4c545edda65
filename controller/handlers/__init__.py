"""Controller event handlers, one module per concern.

- ``failover``      controller election, failover, resignation, session expiry
- ``membership``    broker registration changes (new, dead, bounced, modified brokers)
- ``topics``        topic and partition creation, topic ids
- ``responses``     broker responses (log-dir failures via LeaderAndIsr responses)
- ``isr``           ISR changes: the AlterPartition RPC and ``/isr_change_notification``
- ``log_dirs``      log-dir failures announced in ``/log_dir_event_notification``
- ``reassignment``  partition reassignment (``/admin/reassign_partitions`` and the admin API)
                    (``reassignment_znodes``: the znodes it writes and watches)
- ``deletion``      topic deletion (``/admin/delete_topics``, StopReplica responses)
- ``elections``     preferred/unclean elections (ZooKeeper and admin API), auto rebalance
- ``shutdown``      controlled shutdown of a broker
- ``config_changes`` the ``/config/changes`` watch (a topic's unclean election turned on)
- ``features``      feature versioning: ``/feature``, UpdateFeatures, broker compatibility
- ``producer_ids``  producer-id blocks for brokers (AllocateProducerIds)

Each handler class exposes ``handlers()``: a map from event type to the method handling it.
Handlers that add steps to the end of controller failover call
``ctl.election.add_failover_hook`` in their constructor; the order of ``all_handlers`` is
therefore Kafka's failover order (reassignments, then deletions, then pending preferred
elections, then the auto-rebalance schedule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.core.controller import Controller


def all_handlers(ctl: Controller) -> list[Any]:
    from controller.handlers.config_changes import ConfigChanges
    from controller.handlers.deletion import TopicDeletionHandler
    from controller.handlers.elections import LeaderElections
    from controller.handlers.features import FeatureVersioning
    from controller.handlers.isr import IsrChanges
    from controller.handlers.log_dirs import LogDirEvents
    from controller.handlers.membership import BrokerMembership
    from controller.handlers.producer_ids import ProducerIdAllocation
    from controller.handlers.reassignment import PartitionReassignments
    from controller.handlers.responses import BrokerResponses
    from controller.handlers.shutdown import ControlledShutdownHandler
    from controller.handlers.topics import Topics

    return [
        ctl.election,
        BrokerMembership(ctl),
        Topics(ctl),
        BrokerResponses(ctl),
        # Failover hooks run in this order: reassignments (Kafka's step 10), deletions (11),
        # then LeaderElections' pending preferred elections and auto rebalance (12-13).
        PartitionReassignments(ctl),
        TopicDeletionHandler(ctl),
        LeaderElections(ctl),
        ControlledShutdownHandler(ctl),
        ConfigChanges(ctl),
        IsrChanges(ctl),
        LogDirEvents(ctl),
        FeatureVersioning(ctl),
        ProducerIdAllocation(ctl),
    ]
