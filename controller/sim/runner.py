"""One seeded schedule, start to verdict; and the command line (``python -m controller.sim``).

A schedule: brokers start, a first topic is created, the controllers start; then
``operations`` random operations and faults, each after a random number of scheduler steps;
then the faults stop (``World.heal``) and the quiet cluster is checked. Everything is drawn
from ``random.Random(seed)``, so ``run_schedule(seed)`` always does exactly the same thing.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import random
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import structlog

from controller.invariants import Violation
from controller.sim.ops import apply_op, random_op
from controller.sim.world import SimConfig, World

DEFAULT_OPERATIONS = 12
DEFAULT_MAX_STEPS_BETWEEN = 30


@dataclass
class SimResult:
    seed: int
    violations: list[Violation]
    steps: int
    operations: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    virtual_seconds: float = 0.0
    fingerprint: str = ""

    @property
    def ok(self) -> bool:
        return not self.violations

    def report(self, trace_lines: int = 80) -> str:
        lines = [
            f"simulation seed {self.seed}: {len(self.violations)} violation(s) after "
            f"{self.steps} steps, {self.virtual_seconds:.1f}s of virtual time",
            *(f"  {v}" for v in self.violations[:10]),
            f"  reproduce: .venv/bin/python -m controller.sim --seed {self.seed} --trace",
            "  operations: " + "; ".join(self.operations),
        ]
        if trace_lines:
            lines.append(f"  last {min(trace_lines, len(self.trace))} trace lines:")
            lines += [f"    {line}" for line in self.trace[-trace_lines:]]
        return "\n".join(lines)


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """Silence the controller's logs for the run (thousands of schedules would flood the
    output and cost more than the simulation); the previous configuration comes back."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    try:
        yield
    finally:
        structlog.configure(**saved)


def config_for_seed(seed: int) -> SimConfig:
    """The cluster shape for a seed: mostly 3 brokers and 2 controllers, sometimes more, with
    or without mid-event interleaving and automatic unclean elections (drawn from a stream of
    its own, so the schedule's stream is the same whatever the shape)."""
    rng = random.Random(f"shape-{seed}")
    return SimConfig(
        brokers=tuple(range(1, rng.choice((3, 3, 4)) + 1)),
        controllers=(100, 101) if rng.random() < 0.8 else (100, 101, 102),
        interleave_p=rng.choice((0.0, 0.03, 0.1)),
        flags={"unclean.leader.election.enable": "true"} if rng.random() < 0.2 else {},
    )


def setup(world: World) -> None:
    for broker in sorted(world.brokers):
        world.op_restart_broker(broker)
    world.op_create_topic(partitions=2, replication=min(2, len(world.brokers)))
    for controller in sorted(world.controllers):
        world.op_restart_controller(controller)


def run_schedule(
    seed: int,
    *,
    operations: int = DEFAULT_OPERATIONS,
    max_steps_between: int = DEFAULT_MAX_STEPS_BETWEEN,
    config: SimConfig | None = None,
) -> SimResult:
    world = World(seed, config or config_for_seed(seed))
    done: list[str] = []
    with quiet_logs():
        setup(world)
        for _ in range(operations):
            world.run(world.rng.randint(0, max_steps_between))
            if world.observer.found_any():
                break
            name, args = random_op(world)
            done.append(f"{name}({', '.join(f'{k}={v}' for k, v in args.items())})")
            apply_op(world, name, args)
        violations = world.heal()
        violations += world.final_violations()
    return SimResult(
        seed, violations, world.steps, done, list(world.trace), world.now, world.fingerprint
    )


def run_many(seeds: Sequence[int], **kwargs: object) -> list[SimResult]:
    """Every seed's result (failures and successes), in order."""
    return [run_schedule(seed, **kwargs) for seed in seeds]  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controller.sim",
        description="Run seeded simulation schedules of the controller against the invariants.",
    )
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--count", type=int, default=1, help="how many consecutive seeds")
    parser.add_argument("--operations", type=int, default=DEFAULT_OPERATIONS)
    parser.add_argument("--trace", action="store_true", help="print the whole trace of a run")
    args = parser.parse_args(argv)
    failures = 0
    started = time.perf_counter()
    for seed in range(args.seed, args.seed + args.count):
        result = run_schedule(seed, operations=args.operations)
        if args.trace:
            print("\n".join(result.trace))
        if not result.ok:
            failures += 1
            print(result.report(trace_lines=0 if args.trace else 80))
    elapsed = time.perf_counter() - started
    print(f"{args.count} schedule(s), {failures} failed, {elapsed:.1f}s", file=sys.stderr)
    return 1 if failures else 0


__all__ = [
    "SimResult",
    "config_for_seed",
    "main",
    "quiet_logs",
    "run_many",
    "run_schedule",
    "setup",
]
