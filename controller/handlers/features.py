"""Feature versioning (reference §2.12, KIP-584): ``/feature`` at failover, ``UpdateFeatures``,
and the compatibility check that keeps brokers which cannot run the finalized feature levels
out of the live set.

This controller runs as Kafka's does with an IBP of 3.3 or later: feature versioning is
enabled and ``/feature`` is written in version 2. The finalized features are read at
failover and re-read before every update (the update is conditional on the version read, so
a concurrent writer is detected, not overwritten). A watch on ``/feature`` follows changes
made by hand, as Kafka's feature cache does: the levels brokers are checked against are
always those in ZooKeeper.

A ``/feature`` that cannot be decoded is left alone (overwriting it would lose the levels the
cluster runs at): the controller logs it, checks no broker against it, and refuses updates
with FEATURE_UPDATE_FAILED until it is repaired.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import ApiError, Errors
from controller.core.events import BrokerChange, FeatureZNodeChange, UpdateFeatures
from controller.core.features import (
    SupportedFeatures,
    apply_feature_updates,
    partition_on_feature_compatibility,
)
from controller.zk import codecs, paths
from controller.zk.errors import (
    BadVersionError,
    MalformedZnodeError,
    NodeExistsError,
    ZkError,
)
from controller.zk.gateway_cluster import ABSENT
from controller.zk.watches import ZNodeChangeHandler

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.features")

FEATURE_ZNODE_VERSION = 2  # IBP >= 3.3-IV0


class FeatureVersioning:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl
        # The finalized features; None while /feature is unreadable.
        self.finalized: dict[str, int] | None = {}
        self.epoch = ABSENT  # /feature's zkVersion
        # Registered brokers kept out of the live set for incompatible features.
        self.incompatible_brokers: set[int] = set()
        ctl.features = self

    def handlers(self) -> dict[type, Any]:
        return {
            UpdateFeatures: self.process_update_features,
            FeatureZNodeChange: lambda e: self.process_feature_znode_change(),
        }

    def _feature_handler(self) -> ZNodeChangeHandler:
        put = self.ctl.put
        return ZNodeChangeHandler(
            paths.FEATURE,
            on_creation=lambda: put(FeatureZNodeChange()),
            on_deletion=lambda: put(FeatureZNodeChange()),
            on_data_change=lambda: put(FeatureZNodeChange()),
        )

    # -- failover ------------------------------------------------------------------------

    def setup_feature_versioning(self) -> None:
        """Kafka's ``enableFeatureVersioning`` (failover step 1): create ``/feature`` enabled
        with no features when absent, re-enable a disabled one (clearing its features)."""
        gateway = self.ctl.gateway
        self.incompatible_brokers.clear()
        gateway.register_change_handler(self._feature_handler())
        try:
            current = gateway.get_feature_znode(watch=True)
        except MalformedZnodeError as exc:
            _log_unreadable(exc)
            self.finalized, self.epoch = None, ABSENT
            return
        if current is None:
            node, version = (
                codecs.FeatureZNode(FEATURE_ZNODE_VERSION, codecs.FEATURE_STATUS_ENABLED),
                ABSENT,
            )
        else:
            existing, version = current
            features = existing.features
            if existing.status == codecs.FEATURE_STATUS_DISABLED:
                if features:
                    log.warning(
                        "/feature is disabled but holds features; clearing them",
                        path=paths.FEATURE,
                        features=existing.levels(),
                    )
                features = {}
            node = codecs.FeatureZNode(
                FEATURE_ZNODE_VERSION, codecs.FEATURE_STATUS_ENABLED, features
            )
            if node == existing:
                self.finalized, self.epoch = node.levels(), version
                return
        try:
            self.epoch = gateway.write_feature_znode(
                node, version, self.ctl.context.epoch_zk_version
            )
        except (BadVersionError, NodeExistsError):
            # Our write resent after a lost reply meets its own first attempt (Kafka's write
            # is unconditional, so its resend succeeds): take /feature if it is what we wrote.
            again = gateway.get_feature_znode()
            if again is None or again[0] != node:
                raise
            self.epoch = again[1]
        self.finalized = node.levels()
        log.info(
            "feature versioning enabled",
            path=paths.FEATURE,
            features=self.finalized,
            feature_epoch=self.epoch,
        )

    def process_feature_znode_change(self) -> None:
        """``/feature`` changed: follow it (absent or disabled: no features; unreadable:
        none checked), and let brokers refused under the old levels in if they may fit."""
        if not self.ctl.is_active:
            return
        finalized: dict[str, int] | None
        try:
            current = self.ctl.gateway.get_feature_znode(watch=True)
        except MalformedZnodeError as exc:
            if self.finalized is not None:
                _log_unreadable(exc)
            finalized, epoch = None, ABSENT
        else:
            if current is None:
                finalized, epoch = {}, ABSENT
            elif current[0].status == codecs.FEATURE_STATUS_DISABLED:
                finalized, epoch = {}, current[1]
            else:
                finalized, epoch = current[0].levels(), current[1]
        self.epoch = epoch
        if finalized == self.finalized:
            return
        log.warning(
            "finalized features changed in ZooKeeper, not by this controller",
            path=paths.FEATURE,
            before=self.finalized,
            after=finalized,
            feature_epoch=epoch,
        )
        self.finalized = finalized
        if self.incompatible_brokers:
            self.ctl.put(BrokerChange())

    # -- broker compatibility ------------------------------------------------------------

    def compatible(self, brokers: Mapping[int, SupportedFeatures]) -> list[int]:
        """The ids of ``brokers`` that support every finalized level, sorted; the others are
        remembered as incompatible and logged (Kafka's ``partitionOnFeatureCompatibility``)."""
        ok, refused = partition_on_feature_compatibility(brokers, self.finalized)
        self.incompatible_brokers.difference_update(ok)
        if refused:
            self.incompatible_brokers.update(refused)
            log.warning(
                "ignoring broker registrations: they do not support the finalized features",
                brokers=refused,
                finalized=self.finalized,
            )
        return ok

    def retain_registered(self, registered: set[int]) -> None:
        """Registrations that went away are no longer incompatible, just gone."""
        self.incompatible_brokers.intersection_update(registered)

    # -- UpdateFeatures ------------------------------------------------------------------

    def process_update_features(self, event: UpdateFeatures) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            event.reply.set_exception(ApiError(Errors.NOT_CONTROLLER))
            return
        try:
            current = ctl.gateway.get_feature_znode()
        except MalformedZnodeError as exc:
            log.error(
                "cannot update features: /feature is unreadable", path=exc.path, error=exc.problem
            )
            event.reply.set_result(
                {u.feature: ApiError(Errors.FEATURE_UPDATE_FAILED, str(exc)) for u in event.updates}
            )
            return
        existing, version = ({}, ABSENT) if current is None else (current[0].levels(), current[1])
        ctx = ctl.context
        supported = {b.id: b.features for b in ctx.live_or_shutting_down_brokers()}
        target, results = apply_feature_updates(event.updates, existing, supported)
        if target != existing and not event.validate_only:
            node = codecs.FeatureZNode(
                FEATURE_ZNODE_VERSION,
                codecs.FEATURE_STATUS_ENABLED,
                {name: (level, level) for name, level in target.items()},
            )
            # A ZkError is a race lost to another writer, or our own write whose reply was
            # lost and whose resend found it applied. ControllerMovedError (deposed) is not
            # one: it fails the whole request as NOT_CONTROLLER.
            try:
                self.epoch = ctl.gateway.write_feature_znode(node, version, ctx.epoch_zk_version)
                written = True
            except ZkError as exc:
                written = self._written_anyway(target)
                if not written:
                    log.warning("feature update failed", path=paths.FEATURE, error=str(exc))
                    failed = ApiError(
                        Errors.FEATURE_UPDATE_FAILED, f"writing {paths.FEATURE} failed: {exc}"
                    )
                    results = {f: failed if r is None else r for f, r in results.items()}
            if written:
                log.info(
                    "finalized features updated",
                    before=existing,
                    after=target,
                    feature_epoch=self.epoch,
                )
                self.finalized = target
                if self.incompatible_brokers:
                    # Brokers refused under the old levels may support the new ones.
                    ctl.put(BrokerChange())
        event.reply.set_result(results)

    def _written_anyway(self, target: dict[str, int]) -> bool:
        """After a failed write, re-read ``/feature`` so the cache follows what is there;
        True when it holds exactly ``target`` (our write went through)."""
        try:
            current = self.ctl.gateway.get_feature_znode()
        except (MalformedZnodeError, ZkError):
            return False
        if current is None:
            return False
        node, version = current
        enabled = node.status == codecs.FEATURE_STATUS_ENABLED
        self.finalized, self.epoch = (node.levels() if enabled else {}), version
        return enabled and node.levels() == target


def _log_unreadable(exc: MalformedZnodeError) -> None:
    log.error(
        "cannot read the finalized features; checking no broker against them",
        path=exc.path,
        error=exc.problem,
    )
