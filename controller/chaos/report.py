"""The chaos run's report: what was injected, what it did, and what broke (which must be
nothing). Rendered as text for the terminal and ``docs/reliability.md``, and as JSON."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from controller.chaos.faults import FaultRecord


@dataclass
class ChaosReport:
    seed: int
    mode: str  # "short" | "long"
    session_timeout_ms: int
    started_at: float = 0.0
    duration_s: float = 0.0
    faults: list[FaultRecord] = field(default_factory=list)
    first_epoch: int | None = None
    last_epoch: int | None = None
    elections_logged: int = 0
    operations: Counter[tuple[str, str]] = field(default_factory=Counter)
    topics_created: int = 0
    broker_accepted: int = 0
    broker_rejections: Counter[str] = field(default_factory=Counter)
    process_exits: list[str] = field(default_factory=list)
    polls: int = 0
    failed_polls: int = 0
    violations: list[str] = field(default_factory=list)  # "[invariant] message"
    recovery_failures: list[str] = field(default_factory=list)
    audit: dict[str, Any] = field(default_factory=dict)
    work_dir: str = ""

    @property
    def failovers(self) -> int:
        if self.first_epoch is None or self.last_epoch is None:
            return 0
        return self.last_epoch - self.first_epoch

    @property
    def passed(self) -> bool:
        return not self.violations and not self.recovery_failures

    def recoveries(self, *, from_injection: bool = False) -> list[tuple[float, FaultRecord]]:
        """(seconds to full leadership, fault), shortest first; measured from the end of each
        fault, or from its injection (which includes the failover a controller fault waits
        for)."""
        out = []
        for r in self.faults:
            value = r.outage_s if from_injection else r.recovery_s
            if value is not None:
                out.append((value, r))
        return sorted(out, key=lambda item: item[0])

    def to_json(self) -> dict[str, Any]:
        longest = self.recoveries()[-1] if self.recoveries() else None
        outage = self.recoveries(from_injection=True)
        worst = outage[-1] if outage else None
        return {
            "seed": self.seed,
            "mode": self.mode,
            "passed": self.passed,
            "session_timeout_ms": self.session_timeout_ms,
            "duration_s": round(self.duration_s, 1),
            "faults_injected": len(self.faults),
            "faults_by_kind": dict(Counter(r.plan.kind for r in self.faults)),
            "failovers": self.failovers,
            "controller_epochs": [self.first_epoch, self.last_epoch],
            "elections_logged": self.elections_logged,
            "longest_time_to_full_leadership_s": round(worst[0], 2) if worst else None,
            "longest_time_to_full_leadership_fault": worst[1].plan.describe() if worst else None,
            "longest_after_fault_end_s": round(longest[0], 2) if longest else None,
            "longest_after_fault_end_fault": longest[1].plan.describe() if longest else None,
            "operations": {f"{k} {o}": n for (k, o), n in sorted(self.operations.items())},
            "broker_requests_accepted": self.broker_accepted,
            "broker_requests_rejected": dict(self.broker_rejections),
            "process_exits": self.process_exits,
            "violations": self.violations,
            "recovery_failures": self.recovery_failures,
            "audit": self.audit,
            "faults": [
                {
                    "fault": r.plan.describe(),
                    "target": r.target,
                    "epoch": [r.epoch_before, r.epoch_after],
                    "to_full_leadership_s": None if r.outage_s is None else round(r.outage_s, 2),
                    "after_fault_end_s": None if r.recovery_s is None else round(r.recovery_s, 2),
                    "notes": r.notes,
                }
                for r in self.faults
            ],
            "work_dir": self.work_dir,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2)

    def render(self) -> str:
        kinds = Counter(r.plan.kind for r in self.faults)
        lines = [
            f"chaos run ({self.mode}), seed {self.seed}: "
            + ("PASSED" if self.passed else "FAILED"),
            f"  duration            {self.duration_s / 60:.1f} min, session timeout "
            f"{self.session_timeout_ms} ms",
            f"  faults injected     {len(self.faults)}: "
            + ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())),
            f"  failovers           {self.failovers} (controller epoch {self.first_epoch} -> "
            f"{self.last_epoch}; {self.elections_logged} elections in the state-change logs)",
        ]
        for label, from_injection in (("from injection", True), ("after fault end", False)):
            recoveries = self.recoveries(from_injection=from_injection)
            if not recoveries:
                continue
            times = [t for t, _ in recoveries]
            worst_t, worst = recoveries[-1]
            lines.append(
                f"  full leadership     {label}: longest {worst_t:.1f} s "
                f"({worst.plan.describe()}), median {statistics.median(times):.1f} s, "
                f"p95 {times[int(0.95 * (len(times) - 1))]:.1f} s"
            )
        ops = Counter[str]()
        failed = Counter[str]()
        for (kind, outcome), n in self.operations.items():
            ops[kind] += n
            if outcome != "ok":
                failed[kind] += n
        lines.append(
            "  admin operations    "
            + ", ".join(f"{k} {ops[k]} ({failed[k]} refused or failed)" for k in sorted(ops))
        )
        rejected = sum(self.broker_rejections.values())
        why = ", ".join(f"{e} {n}" for e, n in sorted(self.broker_rejections.items()))
        lines.append(
            f"  broker requests     {self.broker_accepted} accepted, {rejected} refused"
            + (f" ({why})" if rejected else "")
        )
        if self.process_exits:
            lines.append(f"  process exits       {len(self.process_exits)}: "
                         + "; ".join(self.process_exits[:10]))  # fmt: skip
        if self.audit:
            lines.append(
                "  transaction-log audit "
                + ", ".join(f"{k} {v}" for k, v in self.audit.items() if k != "violations")
            )
        lines.append(f"  violations          {len(self.violations)}")
        lines += [f"    {v}" for v in self.violations[:50]]
        if self.recovery_failures:
            lines.append(f"  recovery failures   {len(self.recovery_failures)}")
            lines += [f"    {f}" for f in self.recovery_failures[:50]]
        if self.work_dir:
            lines.append(f"  logs                {self.work_dir}")
        return "\n".join(lines)
