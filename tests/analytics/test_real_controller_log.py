"""End to end: a real controller and reference brokers go through a broker failure and
recovery; the Spark job then finds that outage in the controller's own state-change log."""

from __future__ import annotations

import time
from pathlib import Path

from controller.analytics.job import JobConfig, analyze
from tests.cluster import Cluster


def test_outage_of_a_real_cluster_is_found_with_its_partition_and_duration(
    spark, zk_connect: str, tmp_path: Path
) -> None:
    cluster = Cluster(zk_connect, tmp_path / "cluster")
    try:
        for broker in (1, 2, 3):
            cluster.start_broker(broker)
        daemon = cluster.start_controller(0)
        cluster.active_controller()
        # e2e-0 lives only on broker 1; e2e-1 on brokers 2 and 3.
        cluster.create_topic("e2e", {0: [1], 1: [2, 3]})
        cluster.wait_state("e2e", 0, leader=1)
        cluster.wait_state("e2e", 1, leader=2)

        cluster.kill_broker(1)
        down = time.monotonic()
        cluster.wait_state("e2e", 0, leader=-1)
        time.sleep(2.0)  # the outage lasts at least this long
        cluster.start_broker(1)
        cluster.wait_state("e2e", 0, leader=1)
        outage = time.monotonic() - down
        log_path = Path(daemon.config.log_dir) / "state-change.log"
        # Stop the controller before the brokers, so their teardown is not logged as outages;
        # stopping closes (and flushes) the state-change log.
        cluster.stop_controller(0)
    finally:
        cluster.close()

    result = analyze(
        spark, JobConfig(inputs=[str(log_path)], output=str(tmp_path / "out"), report=True)
    )
    assert result.bad == 0
    windows = spark.read.parquet(str(tmp_path / "out" / "unavailability_windows")).collect()
    e2e = [w for w in windows if w["topic"] == "e2e"]
    assert [(w["partition"], w["end_reason"]) for w in e2e] == [(0, "recovered")]
    (window,) = e2e
    # The controller saw the outage start after the broker's session closed and end when the
    # broker was back: within the span the test measured, and not shorter than its pause.
    assert 2.0 <= window["outage_s"] <= outage + 1.0
    assert window["leader_after"] == 1
    assert result.report_path is not None and Path(result.report_path).exists()
