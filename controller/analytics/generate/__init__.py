"""Synthetic state-change logs: ``zk-controller analyze generate``.

Each cluster is simulated independently (``sim.ClusterSim``), in parallel processes when the
log is big, and written either as one JSON-lines file or as one file per cluster.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from controller.analytics.generate.sim import ClusterSim, ClusterSpec, size_for
from controller.analytics.generate.writer import Noise, RecordWriter

__all__ = ["ClusterSpec", "GenerateResult", "Noise", "default_clusters", "generate"]

CLUSTER_NAMES = ("prod-eu-1", "prod-us-1", "staging-1", "prod-ap-1", "analytics-1")
DEFAULT_START = datetime(2026, 10, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class GenerateResult:
    paths: list[Path]
    lines: int
    clusters: list[str]


def default_clusters(records: int, count: int) -> list[tuple[ClusterSpec, int]]:
    """Cluster specs and each one's share of the line budget, bigger clusters logging more."""
    specs: list[tuple[ClusterSpec, int]] = []
    weights = [(1.0, 0.5, 1.6, 0.8, 1.2)[i % 5] for i in range(count)]
    total = sum(weights)
    assigned = 0
    for i in range(count):
        share = records - assigned if i == count - 1 else int(records * weights[i] / total)
        assigned += share
        name = CLUSTER_NAMES[i] if i < len(CLUSTER_NAMES) else f"cluster-{i + 1}"
        brokers, partitions = size_for(share, i)
        spec = ClusterSpec(
            name=name,
            brokers=brokers,
            partitions=partitions,
            auto_rebalance=i % 3 != 2,  # one cluster in three runs without auto rebalance
        )
        specs.append((spec, share))
    return specs


def _run_cluster(
    spec: ClusterSpec,
    budget: int,
    path: str,
    seed: str,
    start_us: int,
    end_us: int,
    noise: Noise,
    write_cluster: bool,
) -> int:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as out:
        writer = RecordWriter(out, spec.name if write_cluster else None, budget, rng, noise)
        ClusterSim(spec, writer, rng, start_us, end_us).run()
        writer.close()
        return writer.lines


def generate(
    records: int,
    out: str | os.PathLike[str],
    clusters: int = 3,
    seed: int = 1,
    start: datetime = DEFAULT_START,
    days: float = 30.0,
    noise: Noise | None = None,
    write_cluster: bool = True,
    processes: int | None = None,
    specs: Sequence[tuple[ClusterSpec, int]] | None = None,
) -> GenerateResult:
    """Write ``records`` lines of state-change log to ``out``.

    ``out`` is a file (all clusters in one log) or, when it is an existing directory or ends
    with a path separator, a directory that gets one ``<cluster>.jsonl`` per cluster.
    """
    if not days > 0:  # also NaN
        raise ValueError(f"days must be positive, got {days}")
    noise = Noise() if noise is None else noise
    plan = list(specs) if specs is not None else default_clusters(records, clusters)
    start_us = int(start.timestamp() * 1_000_000)
    end_us = start_us + int(days * 86400 * 1_000_000)
    target = Path(out)
    as_dir = str(out).endswith(os.sep) or target.is_dir()
    if as_dir:
        target.mkdir(parents=True, exist_ok=True)
        work = target
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        # The per-cluster parts go beside the target (same filesystem), unless the target is
        # a pipe or a device such as /dev/stdout: then to the temp directory.
        beside = not target.exists() or target.is_file()
        work = Path(tempfile.mkdtemp(prefix=".gen-", dir=target.parent if beside else None))
    if processes is None:
        processes = min(len(plan), os.cpu_count() or 1) if records >= 200_000 else 1
    try:
        paths = [work / f"{spec.name}.jsonl" for spec, _ in plan]
        counts = _run_clusters(
            plan, paths, seed, start_us, end_us, noise, write_cluster, processes
        )
        if as_dir:
            return GenerateResult(paths, sum(counts), [spec.name for spec, _ in plan])
        with open(target, "wb") as sink:
            for path in paths:
                with open(path, "rb") as src:
                    shutil.copyfileobj(src, sink, 1 << 24)
    finally:
        if not as_dir:  # also when the reader of a pipe went away mid-copy
            shutil.rmtree(work, ignore_errors=True)
    return GenerateResult([target], sum(counts), [spec.name for spec, _ in plan])


def _run_clusters(
    plan: Sequence[tuple[ClusterSpec, int]],
    paths: Sequence[Path],
    seed: int,
    start_us: int,
    end_us: int,
    noise: Noise,
    write_cluster: bool,
    processes: int,
) -> list[int]:
    jobs = [
        (spec, share, str(path), f"{seed}-{i}", start_us, end_us, noise, write_cluster)
        for i, ((spec, share), path) in enumerate(zip(plan, paths, strict=True))
    ]
    if processes > 1:
        # spawn, not fork: the caller may be a process with a live JVM gateway
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            return pool.starmap(_run_cluster, jobs)
    return [_run_cluster(*job) for job in jobs]
