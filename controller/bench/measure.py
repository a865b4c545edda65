"""What a scenario reports besides its time: medians, ZooKeeper rates, event-queue times, load.

ZooKeeper activity comes from the controller's own metrics (``zookeeper_request_seconds`` and
``zookeeper_batch_size`` by operation), diffed over the scenario: ops are paths read or ops
written (a batched call counts its size), and a rate is ops per second *spent in those calls*,
which is what compares with the raw batched rates of ``zk_baseline``.
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

PREFIX = "kafka_controller_"
WRITE_OPS = ("multi", "multi_many", "create", "set", "delete", "ensure_path")
READ_OPS = ("get_many", "get", "exists", "get_children")
BATCHED = frozenset({"multi", "multi_many", "get_many"})
_LE = re.compile(r'le="([^"]+)"')


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def summary(values: Sequence[float]) -> dict[str, Any]:
    """Median and spread of a scenario's repetitions (seconds)."""
    ordered = sorted(values)
    return {
        "median_s": round(statistics.median(ordered), 4),
        "min_s": round(ordered[0], 4),
        "max_s": round(ordered[-1], 4),
        "samples_s": [round(v, 4) for v in values],
    }


def _delta(before: Mapping[str, float], after: Mapping[str, float], key: str) -> float:
    return after.get(key, 0.0) - before.get(key, 0.0)


def zk_activity(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Ops and seconds in ZooKeeper calls between two scrapes, split into reads and writes."""
    out = {"read_ops": 0.0, "read_s": 0.0, "write_ops": 0.0, "write_s": 0.0}
    for kind, operations in (("read", READ_OPS), ("write", WRITE_OPS)):
        for op in operations:
            label = f'{{operation="{op}"}}'
            calls = _delta(before, after, f"{PREFIX}zookeeper_request_seconds_count{label}")
            seconds = _delta(before, after, f"{PREFIX}zookeeper_request_seconds_sum{label}")
            size = (
                _delta(before, after, f"{PREFIX}zookeeper_batch_size_sum{label}")
                if op in BATCHED
                else calls
            )
            out[f"{kind}_ops"] += size
            out[f"{kind}_s"] += seconds
    return out


def zk_rates(
    activity: Mapping[str, float], baseline: Mapping[str, float] | None
) -> dict[str, float | None]:
    """ops/s while in ZooKeeper calls, and as a fraction of the batched baseline."""
    out: dict[str, float | None] = {}
    for kind in ("read", "write"):
        ops, seconds = activity[f"{kind}_ops"], activity[f"{kind}_s"]
        rate = ops / seconds if seconds > 0 and ops > 0 else None
        out[f"{kind}_ops"] = int(ops)
        out[f"{kind}_ops_per_s"] = round(rate) if rate else None
        base = (baseline or {}).get(f"{kind}_ops_per_s")
        out[f"{kind}_vs_baseline"] = round(rate / base, 3) if rate and base else None
    return out


def queue_time(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float | None]:
    """Event-queue time over the interval: count, mean and the bucket holding the 99th
    percentile (an upper bound), from the ``event_queue_time_seconds`` histogram."""
    name = f"{PREFIX}event_queue_time_seconds"
    count = _delta(before, after, f"{name}_count")
    if count <= 0:
        return {"events": 0, "mean_ms": None, "p99_ms_at_most": None}
    total = _delta(before, after, f"{name}_sum")
    buckets = []
    for key, value in after.items():
        if key.startswith(f"{name}_bucket"):
            match = _LE.search(key)
            if match:
                bound = float("inf") if match.group(1) == "+Inf" else float(match.group(1))
                buckets.append((bound, value - before.get(key, 0.0)))
    buckets.sort()
    p99 = next((bound for bound, n in buckets if n >= 0.99 * count), float("inf"))
    return {
        "events": int(count),
        "mean_ms": round(total / count * 1000, 3),
        "p99_ms_at_most": None if p99 == float("inf") else round(p99 * 1000, 3),
    }


def median_of(records: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if r.get(key) is not None]
    return round(statistics.median(values), 4) if values else None
