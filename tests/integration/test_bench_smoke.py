"""The benchmark suite at a small size, so it never rots: every scenario completes and reports.

Only that: timings on a shared test machine say nothing, and targets are benchmark results
(``make bench``, docs/performance.md), never test assertions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.zk.server import ZooKeeperHandle

CLI = str(Path(sys.executable).with_name("zk-controller"))
SCENARIOS = {
    "zk_baseline",
    "failover",
    "broker_failure",
    "controlled_shutdown",
    "preferred_election",
    "create_topics",
}
SIZE = 1000

pytestmark = pytest.mark.zookeeper


@pytest.mark.timeout(900)
def test_every_scenario_completes_and_reports(zk_server: ZooKeeperHandle, tmp_path: Path) -> None:
    completed = subprocess.run(
        [CLI, "bench", "all", "--partitions", str(SIZE), "--repeat", "1", "--json",
         "--baseline-nodes", "2000", "--zookeeper", f"{zk_server.hosts}{zk_server.chroot}",
         "--work-dir", str(tmp_path / "bench")],
        capture_output=True, text=True, timeout=840, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-4000:]
    document: dict[str, Any] = json.loads(completed.stdout)
    assert document["machine"]["cores"] >= 1
    rows = {row["scenario"]: row for row in document["results"]}
    assert set(rows) == SCENARIOS
    for name, row in rows.items():
        assert row["median_s"] > 0, name
        assert len(row["samples_s"]) == 1, name
        if name != "zk_baseline":
            assert row["partitions"] == SIZE, name
    assert rows["failover"]["rss_per_partition_bytes"] > 0
    assert rows["zk_baseline"]["write_ops_per_s"] > 0
    assert rows["preferred_election"]["zookeeper"]["write_ops"] >= SIZE


def test_table_output(zk_server: ZooKeeperHandle, tmp_path: Path) -> None:
    """The default output is a readable table with the machine first."""
    completed = subprocess.run(
        [CLI, "bench", "zk_baseline", "--repeat", "1", "--baseline-nodes", "500",
         "--zookeeper", f"{zk_server.hosts}{zk_server.chroot}", "--work-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-4000:]
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("machine: ")
    assert lines[1].split()[:3] == ["scenario", "N", "median"]
    assert any(line.startswith("zk_baseline") for line in lines)
