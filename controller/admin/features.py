"""The cluster's features as an operator sees them (``zk-controller features describe``):
what the registered brokers support, read from ``/brokers/ids/*``, against the finalized levels
in ``/feature``. Changes go through the active controller's UpdateFeatures instead
(``controller.cli.features_cmd``): only it can check them against the live brokers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.admin.assignment import AdminError
from controller.admin.topics import BrokerInfo, list_brokers
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError, NoNodeError
from controller.zk.port import ZkPort


@dataclass(frozen=True, slots=True)
class FeatureView:
    name: str
    # The levels every broker advertising the feature supports (None: none advertises it, or
    # their ranges do not overlap).
    supported: tuple[int, int] | None
    finalized: int | None
    # Registered brokers that do not support the finalized level (or the feature at all).
    unsupported_by: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterFeatures:
    features: tuple[FeatureView, ...]
    epoch: int | None  # /feature's version; None when absent
    enabled: bool
    brokers: tuple[int, ...] = ()
    unreadable_brokers: dict[int, str] = field(default_factory=dict)


def describe_features(
    port: ZkPort, registered: Sequence[BrokerInfo] | None = None
) -> ClusterFeatures:
    """``registered``: the brokers' registrations when the caller has read them already."""
    try:
        data, stat = port.get(paths.FEATURE)
    except NoNodeError:
        node, epoch = None, None
    else:
        try:
            node = codecs.decode_feature_znode(data)
        except MalformedZnodeError as exc:
            raise AdminError(str(exc)) from None
        epoch = stat.version
    finalized = (
        node.levels() if node is not None and node.status == codecs.FEATURE_STATUS_ENABLED else {}
    )
    infos = list_brokers(port).brokers if registered is None else registered
    brokers = {i.id: dict(i.broker.features) for i in infos if i.broker is not None}
    unreadable = {i.id: i.error or "unreadable" for i in infos if i.broker is None}
    views = []
    for name in sorted(set(finalized) | {f for features in brokers.values() for f in features}):
        ranges = [features[name] for features in brokers.values() if name in features]
        lo = max((r[0] for r in ranges), default=None)
        hi = min((r[1] for r in ranges), default=None)
        supported = (lo, hi) if lo is not None and hi is not None and lo <= hi else None
        level = finalized.get(name)
        lacking = tuple(
            sorted(
                b
                for b, features in brokers.items()
                if name not in features
                or (level is not None and not features[name][0] <= level <= features[name][1])
            )
        )
        views.append(FeatureView(name, supported, level, lacking))
    return ClusterFeatures(
        tuple(views),
        epoch,
        node is not None and node.status == codecs.FEATURE_STATUS_ENABLED,
        tuple(sorted(brokers)),
        unreadable,
    )
