"""The real thing: Debian's Prometheus server scrapes a local cluster (real ZooKeeper, an active
and a standby controller, reference brokers) with the project's alert rules, and the
offline-partitions alert fires when a partition loses its only replica and resolves when it
returns. The rules are the committed ones with every ``for:`` shortened to 1 s, and the
scrape and evaluation intervals are 1 s, so the whole run takes seconds."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.daemon import ControllerDaemon
from controller.zk.server import free_port
from tests.cluster import Cluster
from tests.prometheus_tools import DEPLOY, binary
from tests.support import wait_until

pytestmark = pytest.mark.zookeeper

RULES = DEPLOY / "prometheus" / "rules" / "zk-controller.rules.yml"


class PrometheusServer:
    """``prometheus`` on 127.0.0.1 with a temporary storage directory."""

    def __init__(self, work: Path, targets: list[str]) -> None:
        work.mkdir(parents=True, exist_ok=True)
        rules = yaml.safe_load(RULES.read_text())
        for group in rules["groups"]:
            for rule in group["rules"]:
                if "for" in rule:
                    rule["for"] = "1s"
        (work / "rules.yml").write_text(yaml.safe_dump(rules))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                       "scrape_timeout": "1s"},
            "rule_files": ["rules.yml"],
            "scrape_configs": [
                {"job_name": "zk-controller", "static_configs": [{"targets": targets}]}
            ],
        }  # fmt: skip
        (work / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = work / "prometheus.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [
                    binary("prometheus"),
                    f"--config.file={work / 'prometheus.yml'}",
                    f"--storage.tsdb.path={work / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=work,
            )
        wait_until(self._ready, timeout=30, what="prometheus ready")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {self.log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=5) as resp:
            doc = json.loads(resp.read())
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str) -> dict[str, float]:
        """Instant query: ``{instance or '': value}``."""
        result = self.api("query", query=expr)["result"]
        return {r["metric"].get("instance", ""): float(r["value"][1]) for r in result}

    def alert_states(self, name: str) -> list[str]:
        alerts = self.api("alerts")["alerts"]
        return [a["state"] for a in alerts if a["labels"]["alertname"] == name]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def target(daemon: ControllerDaemon) -> str:
    assert daemon.http is not None
    return f"127.0.0.1:{daemon.http.port}"


def test_prometheus_scrapes_the_cluster_and_the_offline_alert_fires_and_resolves(
    cluster: Cluster, tmp_path: Path
) -> None:
    binary("prometheus")  # fail (CI) or skip before starting the cluster
    for b in (1, 2):
        cluster.start_broker(b)
    active = cluster.start_controller(0)
    assert cluster.active_controller() is active
    standby = cluster.start_controller(1)
    cluster.create_topic("solo", {0: [2]})  # one replica: losing broker 2 takes it offline
    cluster.create_topic("pair", {0: [1, 2]})
    cluster.wait_state("solo", 0, leader=2)
    cluster.wait_state("pair", 0, leader=1)

    prom = PrometheusServer(tmp_path / "prometheus", [target(active), target(standby)])
    try:
        # Both controllers are scraped; exactly one is active, and it is controller 0.
        wait_until(
            lambda: (
                prom.query("kafka_controller_active_controller_count")
                == {target(active): 1.0, target(standby): 0.0}
            ),
            what="both controllers scraped, one active",
        )
        assert prom.query("sum(kafka_controller_active_controller_count)") == {"": 1.0}
        assert prom.query("up") == {target(active): 1.0, target(standby): 1.0}
        assert prom.query(
            "kafka_controller_controller_id and on (instance) "
            "kafka_controller_active_controller_count == 1"
        ) == {target(active): 0.0}
        wait_until(
            lambda: prom.query("sum(kafka_controller_global_partition_count)") == {"": 2.0},
            what="partitions scraped",
        )
        # The rules are loaded and healthy; nothing fires on a healthy cluster.
        groups = prom.api("rules")["groups"]
        names = {r["name"] for g in groups for r in g["rules"]}
        assert {"ZkControllerOfflinePartitions", "ZkControllerNoActiveController"} <= names
        # Evaluations made before the first scrape may have seen no controller at all (with
        # `for: 1s`); once the scrapes are in, nothing is pending or firing.
        wait_until(
            lambda: (
                prom.api("alerts")["alerts"] == []
                and all(
                    r["health"] == "ok" for g in prom.api("rules")["groups"] for r in g["rules"]
                )
            ),
            what="healthy rules and no alert on a healthy cluster",
        )

        # Broker 2 dies: "solo" has no replica left, the alert goes pending, then firing.
        cluster.kill_broker(2)
        wait_until(
            lambda: prom.query("sum(kafka_controller_offline_partitions_count)") == {"": 1.0},
            what="offline partition scraped",
        )
        wait_until(
            lambda: prom.alert_states("ZkControllerOfflinePartitions") == ["firing"],
            what="ZkControllerOfflinePartitions firing",
        )
        alert = next(
            a for a in prom.api("alerts")["alerts"]
            if a["labels"]["alertname"] == "ZkControllerOfflinePartitions"
        )  # fmt: skip
        assert alert["labels"]["severity"] == "critical"
        assert alert["annotations"]["summary"] == "1 partitions have no leader"

        # Broker 2 returns: the partition gets its leader back and the alert resolves.
        cluster.start_broker(2)
        cluster.wait_state("solo", 0, leader=2)
        wait_until(
            lambda: prom.alert_states("ZkControllerOfflinePartitions") == [],
            what="ZkControllerOfflinePartitions resolved",
        )
        assert prom.query("sum(kafka_controller_offline_partitions_count)") == {"": 0.0}
        assert prom.alert_states("ZkControllerNoActiveController") == []
    finally:
        prom.close()
