"""Runs a chaos run end to end: cluster up, workload and observer on, faults from the
schedule, a final quiet period, the transaction-log audit, and the report.

Every process is stopped on the way out, whatever happened (``ChaosCluster.close`` in a
``finally``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from controller.chaos.checker import SLACK_S, LiveChecker
from controller.chaos.cluster import CHROOT, ChaosCluster, ClusterSettings
from controller.chaos.faults import ALL_FAULTS, CONTROLLER_FAULTS, Injector, schedule
from controller.chaos.observer import Observer, Sample
from controller.chaos.report import ChaosReport
from controller.chaos.workload import Workload, WorkloadSettings

log = structlog.get_logger("controller.chaos.runner")

# The short run: every kind of fault once, controller faults first.
SHORT_FAULTS = (
    "controller_kill",
    "controller_expire",
    "controller_zombie",
    "broker_kill",
    "broker_bounce",
    "broker_restart",
    "zk_follower_stop",
    "zk_leader_stop",
    "zk_freeze_all",
)
assert set(SHORT_FAULTS) == set(ALL_FAULTS)


@dataclass(frozen=True)
class ChaosSettings:
    seed: int
    work_dir: Path
    short: bool = False
    failovers: int = 100  # the long run stops once this many controller failovers happened
    max_duration_s: float | None = None  # ... or after this long
    session_timeout_ms: int = 6000
    workload: WorkloadSettings = field(default_factory=WorkloadSettings)


class ChaosRun:
    def __init__(self, settings: ChaosSettings) -> None:
        self.settings = settings
        self.session_s = settings.session_timeout_ms / 1000
        self.report = ChaosReport(
            seed=settings.seed,
            mode="short" if settings.short else "long",
            session_timeout_ms=settings.session_timeout_ms,
            work_dir=str(settings.work_dir),
        )
        self.cluster = ChaosCluster(
            settings.work_dir, ClusterSettings(session_timeout_ms=settings.session_timeout_ms)
        )
        self.checker = LiveChecker(self.session_s)
        self.observer: Observer | None = None
        self.workload: Workload | None = None

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> ChaosReport:
        began = time.time()
        self.report.started_at = began
        try:
            self._run()
        finally:
            self._shutdown()
            self.report.duration_s = time.time() - began
        self._audit()
        return self.report

    def _run(self) -> None:
        cluster = self.cluster
        log.info("starting the cluster", work_dir=str(self.settings.work_dir))
        cluster.start()
        cluster.wait_settled(timeout=180)
        self.observer = Observer(cluster, self.checker)
        self.observer.start()
        self.workload = Workload(
            cluster.connect, sorted(cluster.brokers), self.checker, self.settings.seed,
            self.settings.workload, self.session_s,
        )  # fmt: skip
        self.workload.start()
        self._wait_quiet("the first topics to be led", need_topics=True, timeout=120)
        injector = Injector(cluster, self.checker, self.observer, self.session_s)
        kinds = SHORT_FAULTS if self.settings.short else None
        for plan in schedule(self.settings.seed, self.session_s, kinds):
            if self._done():
                break
            log.info("injecting", fault=plan.describe(), failovers=self._failovers())
            record = injector.inject(plan)
            self.report.faults.append(record)
            deadline = record.healed_at + self.session_s + SLACK_S
            sample = self._wait_recovered(
                record.epoch_before if plan.kind in CONTROLLER_FAULTS else None,
                timeout=deadline - time.time() + 30,
            )
            record.epoch_after = self.observer.max_epoch
            if sample is None:
                self.report.recovery_failures.append(
                    f"{plan.describe()} ({record.target}): no full leadership within "
                    f"{time.time() - record.healed_at:.0f}s of the end of the fault"
                )
            else:
                record.recovered_at = sample.t
            time.sleep(plan.pause_s)
        self.workload.stop()
        self._wait_quiet("reassignments and deletions to finish", timeout=120, drained=True)

    def _done(self) -> bool:
        if self.settings.short:
            return False
        if self._failovers() >= self.settings.failovers:
            return True
        limit = self.settings.max_duration_s
        return limit is not None and time.time() - self.report.started_at > limit

    def _failovers(self) -> int:
        observer = self.observer
        if observer is None or observer.first_epoch is None or observer.max_epoch is None:
            return 0
        return observer.max_epoch - observer.first_epoch

    def _everyone_serving(self, sample: Sample) -> bool:
        """Every broker registered and answering, every controller process up."""
        brokers = frozenset(self.cluster.brokers)
        return (
            sample.serving == brokers
            and sample.live_brokers == brokers
            and sample.controllers_up == frozenset(self.cluster.controllers)
        )

    def _wait_recovered(self, epoch_before: int | None, timeout: float) -> Sample | None:
        """Everyone back, full leadership (every partition led: with every broker back, no
        partition lacks a live ISR member), and after a controller fault a new controller."""
        assert self.observer is not None
        return self.observer.wait(
            lambda s: (
                s.full_leadership
                and self._everyone_serving(s)
                and (epoch_before is None or (s.epoch or 0) > epoch_before)
            ),
            max(timeout, 1.0),
        )

    def _wait_quiet(
        self, what: str, timeout: float, *, need_topics: bool = False, drained: bool = False
    ) -> None:
        assert self.observer is not None
        minimum = self.settings.workload.min_topics if need_topics else 0

        def quiet(s: Sample) -> bool:
            return (
                s.full_leadership
                and self._everyone_serving(s)
                and len(s.topics) >= minimum
                and (not drained or (s.deleting == 0 and s.reassigning == 0))
            )

        if self.observer.wait(quiet, timeout) is None:
            latest = self.observer.latest
            self.report.recovery_failures.append(f"timed out after {timeout:.0f}s waiting for "
                                                 f"{what}; last sample: {latest}")  # fmt: skip

    # -- the end ------------------------------------------------------------------------------

    def _shutdown(self) -> None:
        report = self.report
        if self.workload is not None:
            self.workload.stop()
            report.operations = self.workload.outcomes
            report.topics_created = self.workload.planner.sequence
        if self.observer is not None:
            observer = self.observer
            observer.stop()
            report.first_epoch, report.last_epoch = observer.first_epoch, observer.max_epoch
            report.elections_logged = observer.elections_logged
            report.broker_accepted = observer.broker_accepted
            report.broker_rejections = observer.broker_rejections
            report.polls, report.failed_polls = observer.polls, observer.failed_polls
        self.cluster.close()
        report.process_exits = [
            f"{e.name} exited {e.code} at +{e.at - report.started_at:.0f}s"
            for e in self.cluster.exits
        ]
        report.violations = [str(v) for v in self.checker.violations()]

    def _audit(self) -> None:
        """Re-check the safety invariants over ZooKeeper's complete transaction history."""
        from controller.chaos.audit import audit_ensemble

        result = audit_ensemble(
            [node.data_dir for node in self.cluster.ensemble.nodes],
            chroot=CHROOT,
            unclean=self.observer.unclean if self.observer is not None else (),
        )
        self.report.audit = result.summary()
        self.report.violations += [f"(audit) {v}" for v in result.violations]
