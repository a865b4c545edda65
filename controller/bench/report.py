"""The benchmark's output: the machine, a readable table, or one JSON document."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controller.zk.server import four_letter_word

TARGETS_S: dict[tuple[str, int], float] = {
    ("failover", 100_000): 4.0,
    ("broker_failure", 10_000): 1.0,
    ("controlled_shutdown", 10_000): 1.0,
    ("create_topics", 10_000): 3.0,
    ("failover", 1_000_000): 30.0,
}
ELECTION_WRITE_TARGET = 0.5  # of the batched baseline
RSS_TARGET_BYTES = 2048  # per partition, at 100K


def machine(zookeeper_hosts: str) -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) // 1024
    except OSError:
        pass
    zk_version = None
    try:
        host, _, port = zookeeper_hosts.split(",")[0].rpartition(":")
        for line in four_letter_word(host, int(port), "srvr").splitlines():
            if line.startswith("Zookeeper version:"):
                zk_version = line.split(":", 1)[1].strip().split(",")[0]
    except (OSError, ValueError):
        pass
    import grpc
    import kazoo.version

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_mib": memory,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "kazoo": kazoo.version.__version__,
        "grpcio": grpc.__version__,
        "zookeeper": zk_version,
    }


def _fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _target(row: dict[str, Any]) -> str:
    scenario, n = row["scenario"], row["partitions"]
    if (scenario, n) in TARGETS_S:
        limit = TARGETS_S[(scenario, n)]
        return f"<= {limit:g}s {'met' if row['median_s'] <= limit else 'MISSED'}"
    if scenario == "preferred_election":
        ratio = (row.get("zookeeper") or {}).get("write_vs_baseline")
        if ratio is not None:
            ok = ratio >= ELECTION_WRITE_TARGET
            return f"zk writes {ratio:.0%} of baseline {'met' if ok else 'MISSED'}"
    return ""


def table(results: Sequence[dict[str, Any]]) -> str:
    header = (
        f"{'scenario':<20} {'N':>9} {'median s':>9} {'min s':>8} {'max s':>8} "
        f"{'zk w/s':>9} {'w/base':>7} {'zk r/s':>9} {'r/base':>7} {'queue p99':>10} "
        f"{'load':>11}  notes"
    )
    lines = [header, "-" * len(header)]
    for row in results:
        zk = row.get("zookeeper") or {}
        queue = row.get("event_queue") or {}
        notes = []
        if row["scenario"] == "failover":
            notes.append(f"ready {_fmt_s(row.get('ready_median_s'))}s")
            notes.append(f"RSS {row['rss_per_partition_bytes']} B/partition")
        if row["scenario"] == "zk_baseline":
            notes.append(
                f"create {row['create_ops_per_s']}/s write {row['write_ops_per_s']}/s "
                f"read {row['read_ops_per_s']}/s"
            )
        for key, label in (
            ("processed_median_s", "whole event"),
            ("rpc_median_s", "RPC"),
            ("acked_median_s", "acked"),
            ("controller_cpu_median_s", "controller CPU"),
            ("brokers_cpu_median_s", "brokers CPU"),
        ):
            if row.get(key) is not None:
                notes.append(f"{label} {row[key]:.3f}s")
        if "cluster_partitions" in row:
            notes.append(f"cluster {row['cluster_partitions']}")
        target = _target(row)
        if target:
            notes.append(target)
        load = row.get("load") or []
        p99 = queue.get("p99_ms_at_most")
        lines.append(
            f"{row['scenario']:<20} {row['partitions']:>9} {row['median_s']:>9.3f} "
            f"{row['min_s']:>8.3f} {row['max_s']:>8.3f} "
            f"{zk.get('write_ops_per_s') or '-':>9} {_ratio(zk.get('write_vs_baseline')):>7} "
            f"{zk.get('read_ops_per_s') or '-':>9} {_ratio(zk.get('read_vs_baseline')):>7} "
            f"{'-' if p99 is None else f'<={p99:g}ms':>10} "
            f"{'/'.join(f'{x:.1f}' for x in load):>11}  {'; '.join(notes)}"
        )
    return "\n".join(lines)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
