"""The short chaos run (``zk-controller chaos --short``): every kind of fault once against a
real 3-node ensemble, 3 controller processes and 5 reference brokers under the admin
workload, with the live invariant checker and the transaction-log audit. ``make chaos`` runs
the long one (docs/reliability.md, ## Chaos)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.chaos.faults import ALL_FAULTS
from controller.chaos.runner import ChaosRun, ChaosSettings

pytestmark = pytest.mark.timeout(240)


def test_short_chaos_run_violates_nothing(zk_local_install: Path, tmp_path: Path) -> None:
    # A 4 s session timeout keeps the run near a minute; the long run uses 6 s.
    settings = ChaosSettings(seed=1, work_dir=tmp_path / "chaos", short=True,
                             session_timeout_ms=4000)  # fmt: skip
    report = ChaosRun(settings).run()
    print(report.render())  # shown with -s, and in the report of a failing run

    assert sorted(r.plan.kind for r in report.faults) == sorted(ALL_FAULTS)
    assert report.failovers >= 3, "each controller fault must have moved the controller"
    assert report.elections_logged >= report.failovers
    assert report.audit["elections"] >= report.failovers + 1
    assert report.audit["state versions"] > 0, "the audit must have read the transaction logs"
    assert sum(report.operations.values()) > 10, "the workload must have kept running"
    assert all(v.startswith(("[", "(audit) [")) for v in report.violations)
    assert report.violations == [], "\n".join(report.violations)
    assert report.recovery_failures == [], "\n".join(report.recovery_failures)
    assert all(r.recovery_s is not None for r in report.faults)
