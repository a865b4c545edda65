"""Kafka's ``ControllerState`` (reference §4.5): what the controller event thread is doing.

The value is exported as the ``controller_state`` gauge (0 when idle), and each state except
``Idle`` and ``UpdateMetadataResponseReceived`` has a Kafka rate-and-time timer. The values and
names are Kafka's, so dashboards and the reference map one to one.
"""

from __future__ import annotations

import enum


class ControllerState(enum.IntEnum):
    Idle = 0
    ControllerChange = 1
    BrokerChange = 2
    TopicChange = 3
    TopicDeletion = 4
    AlterPartitionReassignment = 5
    AutoLeaderBalance = 6
    ManualLeaderBalance = 7
    ControlledShutdown = 8
    IsrChange = 9
    LeaderAndIsrResponseReceived = 10
    LogDirChange = 11
    ControllerShutdown = 12
    UncleanLeaderElectionEnable = 13
    TopicUncleanLeaderElectionEnable = 14
    ListPartitionReassignment = 15
    UpdateMetadataResponseReceived = 16
    UpdateFeatures = 17

    @property
    def rate_metric_name(self) -> str | None:
        """Kafka's ``kafka.controller:type=ControllerStats`` timer name, or None if untimed."""
        return _RATE_METRIC_NAMES.get(self)

    @property
    def is_timed(self) -> bool:
        return self in _RATE_METRIC_NAMES


# Two names are legacy and do not follow "<State>RateAndTimeMs" (reference §4.5), so the
# mapping is spelled out rather than derived.
_RATE_METRIC_NAMES: dict[ControllerState, str] = {
    ControllerState.ControllerChange: "ControllerChangeRateAndTimeMs",
    ControllerState.BrokerChange: "LeaderElectionRateAndTimeMs",
    ControllerState.TopicChange: "TopicChangeRateAndTimeMs",
    ControllerState.TopicDeletion: "TopicDeletionRateAndTimeMs",
    ControllerState.AlterPartitionReassignment: "PartitionReassignmentRateAndTimeMs",
    ControllerState.AutoLeaderBalance: "AutoLeaderBalanceRateAndTimeMs",
    ControllerState.ManualLeaderBalance: "ManualLeaderBalanceRateAndTimeMs",
    ControllerState.ControlledShutdown: "ControlledShutdownRateAndTimeMs",
    ControllerState.IsrChange: "IsrChangeRateAndTimeMs",
    ControllerState.LeaderAndIsrResponseReceived: "LeaderAndIsrResponseReceivedRateAndTimeMs",
    ControllerState.LogDirChange: "LogDirChangeRateAndTimeMs",
    ControllerState.ControllerShutdown: "ControllerShutdownRateAndTimeMs",
    ControllerState.UncleanLeaderElectionEnable: "UncleanLeaderElectionEnableRateAndTimeMs",
    ControllerState.TopicUncleanLeaderElectionEnable: (
        "TopicUncleanLeaderElectionEnableRateAndTimeMs"
    ),
    ControllerState.ListPartitionReassignment: "ListPartitionReassignmentRateAndTimeMs",
    ControllerState.UpdateFeatures: "UpdateFeaturesRateAndTimeMs",
}

#: States with a Kafka timer, in enum order: one ``event_processing_seconds`` series each.
TIMED_STATES: tuple[ControllerState, ...] = tuple(s for s in ControllerState if s.is_timed)
