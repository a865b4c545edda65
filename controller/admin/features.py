"""The cluster's features as an operator sees them (``zk-controller features describe``):
what the registered brokers support, read from ``/brokers/ids/*``, against the finalized levels
in ``/feature``. Changes go through the active controller's UpdateFeatures instead
(``controller.cli.features_cmd``): only it can check them against the live brokers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.admin.assignment import AdminError
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


def _registered_brokers(
    port: ZkPort,
) -> tuple[dict[int, dict[str, tuple[int, int]]], dict[int, str]]:
    try:
        children = port.get_children(paths.BROKERS_IDS)
    except NoNodeError:
        return {}, {}
    supported: dict[int, dict[str, tuple[int, int]]] = {}
    unreadable: dict[int, str] = {}
    for child in children:
        if not child.isdigit():
            continue
        broker_id = int(child)
        path = paths.broker_path(broker_id)
        try:
            data, _ = port.get(path)
        except NoNodeError:
            continue
        try:
            supported[broker_id] = dict(
                codecs.decode_broker_registration(broker_id, data, path).features
            )
        except MalformedZnodeError as exc:
            unreadable[broker_id] = exc.problem
    return supported, unreadable


def describe_features(port: ZkPort) -> ClusterFeatures:
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
    brokers, unreadable = _registered_brokers(port)
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
