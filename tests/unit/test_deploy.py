"""deploy/, docker-compose.yml and the Dockerfile, checked without a Docker engine or a cluster:
Prometheus config and rules with Debian's promtool (including the rules' unit tests), the
Compose file against the Compose specification's JSON schema, the Kubernetes manifests against
the Kubernetes schemas, the Grafana dashboard's structure and every query against the metrics
the daemon exports, the systemd unit, and the generated configuration reference in
docs/operations.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from controller.config import load_config, render_config_reference
from tests.prometheus_tools import DEPLOY, REPO, binary, exported_series_names

PROMETHEUS = DEPLOY / "prometheus"
RULES = PROMETHEUS / "rules" / "zk-controller.rules.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "zk-controller.json"
K8S = DEPLOY / "kubernetes"
METRIC_RE = re.compile(r"\bkafka_controller_[a-z_]+\b")


def promtool(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary("promtool"), *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def load_yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


# -- Prometheus ---------------------------------------------------------------------------


def test_promtool_checks_the_config_and_the_rules_it_loads() -> None:
    result = promtool("check", "config", str(PROMETHEUS / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    # rule_files is relative to the config, so the rules are checked as part of it.
    assert "1 rule files found" in result.stdout + result.stderr
    assert "14 rules found" in result.stdout + result.stderr


def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_alert_rule_unit_tests_pass() -> None:
    result = promtool("test", "rules", "tests/zk-controller.rules.test.yml", cwd=PROMETHEUS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_rejects_a_broken_rule(tmp_path: Path) -> None:
    # The checks above would be worthless if promtool accepted anything.
    broken = tmp_path / "broken.yml"
    broken.write_text(RULES.read_text().replace("(kafka_controller_offline", "(kafka_("))
    assert promtool("check", "rules", str(broken)).returncode != 0


def test_the_alerts_an_operator_needs_exist() -> None:
    by_name = {r["alert"]: r for r in rules() if "alert" in r}
    expected = {
        "ZkControllerNoActiveController": ("kafka_controller_active_controller_count", "1m"),
        "ZkControllerMultipleActiveControllers": (
            "kafka_controller_active_controller_count", "1m"),
        "ZkControllerOfflinePartitions": ("kafka_controller_offline_partitions_count", "1m"),
        "ZkControllerPreferredReplicaImbalance": (
            "kafka_controller_preferred_replica_imbalance_count", "30m"),
        "ZkControllerEventQueueTimeHigh": ("kafka_controller_event_queue_time_seconds", "10m"),
        "ZkControllerEventThreadStalled": ("kafka_controller_event_queue_size", "5m"),
        "ZkControllerZooKeeperSessionExpired": (
            "kafka_controller_zookeeper_session_expirations_total", None),
        "ZkControllerFrequentFailovers": ("kafka_controller_failovers_total", None),
        "ZkControllerEventErrors": ("kafka_controller_event_errors_total", None),
    }  # fmt: skip
    for name, (metric, for_) in expected.items():
        assert name in by_name, name
        assert metric in by_name[name]["expr"], name
        assert by_name[name].get("for") == for_, name
        assert by_name[name]["labels"]["severity"] in ("warning", "critical")
        assert by_name[name]["annotations"]["summary"]


def test_rules_and_dashboard_only_query_exported_metrics() -> None:
    exported = exported_series_names()
    used_by_rules = {m for r in rules() for m in METRIC_RE.findall(r["expr"])}
    used_by_dashboard = {m for e in dashboard_exprs() for m in METRIC_RE.findall(e)}
    assert used_by_rules and used_by_dashboard
    assert used_by_rules - exported == set()
    assert used_by_dashboard - exported == set()


# -- Grafana ------------------------------------------------------------------------------


def _overlaps(a: dict[str, int], b: dict[str, int]) -> bool:
    return not (
        a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"]
        or a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"]
    )  # fmt: skip


def test_grafana_dashboard_structure() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] == "zk-controller" and dash["title"]
    assert isinstance(dash["schemaVersion"], int) and dash["schemaVersion"] >= 36
    panels = dash["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    datasource = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text()
    )["datasources"][0]
    # One dashboard for every cluster a Prometheus scrapes: the datasource and the cluster
    # (job, namespace) are variables, and every query is filtered by them.
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["current"]["value"] == datasource["uid"]
    assert {"job", "namespace"} <= set(variables)
    for p in panels:
        pos = p["gridPos"]
        assert pos["x"] >= 0 and pos["w"] > 0 and pos["x"] + pos["w"] <= 24, p["title"]
        if p["type"] == "row":
            continue
        assert p["type"] in ("stat", "timeseries", "table", "gauge"), p["title"]
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert refs and len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["expr"].strip() and t["datasource"]["uid"] == "${datasource}"
            for selector in re.findall(r"kafka_controller_\w+(\{[^}]*\})?", t["expr"]):
                assert 'job=~"$job"' in selector and 'namespace=~"$namespace"' in selector
            assert t["expr"].count("(") == t["expr"].count(")"), t["expr"]
    placed = [p["gridPos"] for p in panels]
    for i, a in enumerate(placed):
        for b in placed[i + 1 :]:
            assert not _overlaps(a, b), (a, b)


def test_dashboard_shows_what_the_issue_asks_for() -> None:
    exprs = "\n".join(dashboard_exprs())
    for needed in (
        "kafka_controller_active_controller_count", "kafka_controller_controller_id",
        "kafka_controller_controller_epoch", "kafka_controller_offline_partitions_count",
        "kafka_controller_preferred_replica_imbalance_count", "kafka_controller_event_queue_size",
        "kafka_controller_event_queue_time_seconds_bucket", "kafka_controller_failovers_total",
        "kafka_controller_leader_elections_total", "kafka_controller_channel_queue_size",
    ):  # fmt: skip
        assert needed in exprs, needed
    assert "sum by (type)" in exprs and "sum by (broker_id)" in exprs


def test_grafana_provisioning_matches_the_compose_mounts() -> None:
    provider = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/dashboards/zk-controller.yml").read_text()
    )["providers"][0]
    grafana = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["grafana"]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in grafana["volumes"]}
    assert (REPO / mounts[provider["options"]["path"]]).resolve() == DASHBOARD.parent.resolve()
    assert (REPO / mounts["/etc/grafana/provisioning"]).resolve() == (
        DEPLOY / "grafana/provisioning"
    ).resolve()


# -- Compose and Dockerfile --------------------------------------------------------------


def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_file_validates_against_the_compose_spec() -> None:
    # The Compose specification's schema as shipped (offline) by check-jsonschema.
    text = (
        resources.files("check_jsonschema.builtin_schemas.vendor")
        .joinpath("compose-spec.json")
        .read_text()
    )
    schema = json.loads(text)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    doc = compose()
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(doc)]
    assert errors == []
    # ... and the schema does catch mistakes.
    doc["services"]["zk1"]["depends_on"] = {"zk2": {"condition": "service_happy"}}
    assert list(validator.iter_errors(doc))


def test_compose_stack_shape() -> None:
    services = compose()["services"]
    assert {"zk1", "zk2", "zk3"} <= set(services)
    servers = services["zk1"]["environment"]["ZOO_SERVERS"].split()
    assert len(servers) == 3
    assert sorted(services[z]["environment"]["ZOO_MY_ID"] for z in ("zk1", "zk2", "zk3")) == [
        1, 2, 3,
    ]  # fmt: skip
    controllers = [s for s in services if s.startswith("controller-")]
    brokers = [s for s in services if s.startswith("broker-")]
    assert len(controllers) == 2 and len(brokers) == 3
    ids = {services[c]["environment"]["ZKC_CONTROLLER_ID"] for c in controllers}
    assert len(ids) == 2
    for c in controllers:
        env = {k: str(v) for k, v in services[c]["environment"].items() if k.startswith("ZKC_")}
        config = load_config(env=env)  # the daemon's own validation of the environment
        assert config.zookeeper_chroot == "/kafka"
        assert config.metrics_listen.port == 9309
    # Brokers serve no HTTP: their health check is their gRPC health service, not the
    # image's /readyz; the one-shot demo-topic job has none.
    for b in brokers:
        check = " ".join(services[b]["healthcheck"]["test"])
        assert "grpc_health" in check and ":9093" in check and "/readyz" not in check
        assert ":9093" in " ".join(services[b]["command"])
    assert services["demo-topic"]["healthcheck"] == {"disable": True}
    # Prometheus scrapes both controllers on their metrics port, and loads the rules.
    prom = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in prom["scrape_configs"]}
    targets = {t for sc in jobs["zk-controller"]["static_configs"] for t in sc["targets"]}
    assert targets == {f"{c}:9309" for c in controllers}
    mounts = services["prometheus"]["volumes"]
    assert "./deploy/prometheus:/etc/prometheus:ro" in mounts
    for volume in mounts + services["grafana"]["volumes"]:
        source = volume.split(":")[0]
        if source.startswith("./"):
            assert (REPO / source).exists(), source


def test_dockerfile_is_small_and_non_root() -> None:
    text = (REPO / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+)", text, re.MULTILINE)
    assert len(stages) == 2 and all("slim" in s for s in stages)  # build tools stay behind
    users = re.findall(r"^USER (\S+)", text, re.MULTILINE)
    assert users and not users[-1].startswith(("root", "0"))
    # An init as PID 1 (tini forwards SIGTERM; the kernel drops default-action signals to
    # PID 1), installed from Debian in the final stage.
    assert re.search(r'^ENTRYPOINT \["/usr/bin/tini", "--", "zk-controller"\]', text, re.MULTILINE)
    final_stage = text.split("\nFROM ")[-1]
    assert re.search(r"apt-get install -y --no-install-recommends tini\b", final_stage)
    assert "/readyz" in text  # HEALTHCHECK: ready = connected to ZooKeeper
    # zookeeper.auth.scheme = "sasl" needs the extra: without it the image refuses it.
    assert re.search(r"pip install '\.\[sasl\]'", text)
    # An image-level ZKC_* default would outrank the operator's config file.
    env_lines = re.findall(r"^ENV (.+?)(?<!\\)$", text, re.MULTILINE | re.DOTALL)
    assert env_lines and "ZKC_" not in " ".join(env_lines)
    ignore = (REPO / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*") + 1 :][:3] == ["!pyproject.toml", "!README.md", "!controller/"]
    for copied in re.findall(r"^COPY (?!--)(.+) \S+$", text, re.MULTILINE):
        for path in copied.split():
            assert (REPO / path).exists(), path


# -- Kubernetes -----------------------------------------------------------------------------

# The fields of the Prometheus Operator's ServiceMonitor (monitoring.coreos.com/v1) that the
# manifest uses, with unknown fields refused, so a typo fails here as it would on apply.
SERVICE_MONITOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector", "endpoints"],
            "properties": {
                "jobLabel": {"type": "string"},
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "matchLabels": {"type": "object",
                                        "additionalProperties": {"type": "string"}},
                    },
                },
                "namespaceSelector": {"type": "object"},
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": {"type": "string", "pattern": r"^[0-9]+(ms|s|m|h)$"},
                            "scrapeTimeout": {"type": "string",
                                              "pattern": r"^[0-9]+(ms|s|m|h)$"},
                            "honorLabels": {"type": "boolean"},
                        },
                    },
                },
            },
        },
    },
}  # fmt: skip


def k8s_docs() -> list[tuple[Path, dict[str, Any]]]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return [
        (K8S / name, doc)
        for name in kustomization["resources"]
        for doc in load_yaml_docs(K8S / name)
    ]


def test_kustomization_lists_every_manifest() -> None:
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    present = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


def test_kubernetes_manifests_validate_against_the_kubernetes_schemas() -> None:
    docs = k8s_docs()
    kinds = sorted(d["kind"] for _, d in docs)
    assert kinds == [
        "ConfigMap", "PodDisruptionBudget", "Service", "Service", "ServiceMonitor", "StatefulSet",
    ]  # fmt: skip
    for _, doc in docs:
        if doc["kind"] == "ServiceMonitor":
            jsonschema.validate(doc, SERVICE_MONITOR_SCHEMA)
        else:
            # Strict: unknown fields are errors. Offline: the schemas ship with the package.
            kubernetes_validate.validate(doc, "1.30.0", strict=True)
    # The validator does reject a wrong manifest.
    broken = next(d for _, d in docs if d["kind"] == "StatefulSet")
    broken = json.loads(json.dumps(broken))
    broken["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.30.0", strict=True)


def test_kubernetes_wiring() -> None:
    docs = {(d["kind"], d["metadata"]["name"]): d for _, d in k8s_docs()}
    sts = docs[("StatefulSet", "zk-controller")]
    spec = sts["spec"]
    assert spec["replicas"] == 2
    pod_labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()
    assert spec["serviceName"] in {name for kind, name in docs if kind == "Service"}
    container = spec["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert spec["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    env = {e["name"]: e for e in container["env"]}
    assert "pod-index" in env["ZKC_CONTROLLER_ID"]["valueFrom"]["fieldRef"]["fieldPath"]
    # The configuration in the ConfigMap passes the daemon's validation, and listens on the
    # container ports.
    toml_text = docs[("ConfigMap", "zk-controller")]["data"]["controller.toml"]
    config_path = Path("/etc/zk-controller/controller.toml")
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    assert container["args"] == ["run", "--config", str(config_path)]
    assert mount["mountPath"] == str(config_path.parent)
    values = tomllib.loads(toml_text)
    config = load_config(env={}, overrides={"controller.id": 0, **values})
    assert config.metrics_listen.port == ports["metrics"]
    assert config.grpc_listen.port == ports["grpc"]
    # No logrotate in a pod: the daemon rotates the state-change log, and all its files fit
    # in the log volume's size limit.
    logs = next(v for v in spec["template"]["spec"]["volumes"] if v["name"] == "logs")
    limit = logs["emptyDir"]["sizeLimit"]
    assert limit.endswith("Gi")
    kept = config.state_change_log_max_bytes * (config.state_change_log_backups + 1)
    assert 0 < kept < int(limit[:-2]) * 2**30
    # Services select the pods; the ServiceMonitor selects exactly one Service and its port.
    services = [d for (kind, _), d in docs.items() if kind == "Service"]
    for svc in services:
        assert svc["spec"]["selector"].items() <= pod_labels.items()
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in ports
    monitor = docs[("ServiceMonitor", "zk-controller")]["spec"]
    wanted = monitor["selector"]["matchLabels"]
    selected = [s for s in services if wanted.items() <= s["metadata"]["labels"].items()]
    assert len(selected) == 1
    assert monitor["endpoints"][0]["port"] in {p["name"] for p in selected[0]["spec"]["ports"]}
    assert selected[0]["metadata"]["labels"][monitor["jobLabel"]] == "zk-controller"  # job label


# -- systemd -----------------------------------------------------------------------------------


def unit_entries(path: Path) -> dict[str, list[str]]:
    entries: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            entries.setdefault(key.strip(), []).append(value.strip())
    return entries


def test_systemd_unit() -> None:
    unit = DEPLOY / "systemd" / "zk-controller.service"
    entries = unit_entries(unit)
    exec_start = entries["ExecStart"][0].split()
    assert exec_start[1:3] == ["run", "--config"]
    assert entries["ExecReload"] == ["/bin/kill -HUP $MAINPID"]  # SIGHUP = reload
    assert entries["KillSignal"] == ["SIGTERM"]
    assert entries["Restart"] == ["on-failure"]
    # A configuration error (exit 2, as `run` returns for one) is not retried forever.
    assert entries["RestartPreventExitStatus"] == ["2"]
    assert entries["User"] == ["zk-controller"]
    # The example configuration and per-host file pass the daemon's validation.
    host_env = dict(
        line.split("=", 1)
        for line in (DEPLOY / "systemd/zk-controller.default").read_text().splitlines()
        if line and not line.startswith("#")
    )
    unit_env = dict(kv.split("=", 1) for kv in " ".join(entries["Environment"]).split())
    assert not [k for k in unit_env if k.startswith("ZKC_")]  # would outrank the TOML file
    sysusers = [
        line.split()
        for line in (DEPLOY / "systemd/zk-controller.sysusers").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert ["u", entries["User"][0]] in [entry[:2] for entry in sysusers]  # the unit's user
    config = load_config(DEPLOY / "systemd/controller.toml", env={**unit_env, **host_env})
    assert config.controller_id == 1
    assert str(config.state_change_log_file).startswith("/var/log/zk-controller/")
    rotate = (DEPLOY / "systemd/zk-controller.logrotate").read_text()
    assert str(config.state_change_log_file) in rotate
    assert "systemctl reload zk-controller.service" in rotate


def test_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        problem = "systemd-analyze not found"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{problem} (required under CI=true: apt-get install systemd)")
        pytest.skip(f"{problem}; install Debian's systemd package")
    unit = DEPLOY / "systemd" / "zk-controller.service"
    exec_start = unit_entries(unit)["ExecStart"][0].split()
    copy = tmp_path / unit.name
    copy.write_text(unit.read_text().replace(exec_start[0], "/bin/true"))
    result = subprocess.run(
        [analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60
    )
    complaints = [
        line for line in (result.stdout + result.stderr).splitlines() if str(copy) in line
    ]
    assert result.returncode == 0 and complaints == [], result.stdout + result.stderr


# -- docs -------------------------------------------------------------------------------------


def test_operations_guide_has_the_current_configuration_reference() -> None:
    """docs/operations.md embeds ``render_config_reference()`` between markers; regenerate it
    with ``.venv/bin/python docs/update_config_reference.py`` when settings change."""
    text = (REPO / "docs" / "operations.md").read_text()
    begin, end = "<!-- config-reference:begin -->\n", "<!-- config-reference:end -->"
    assert begin in text and end in text
    embedded = text.split(begin, 1)[1].split(end, 1)[0]
    reference = render_config_reference()
    # The generated title becomes a subsection in the guide.
    expected = reference.replace("# zk-controller configuration reference\n\n", "", 1)
    assert embedded.strip() == expected.strip(), (
        "docs/operations.md is stale: run .venv/bin/python docs/update_config_reference.py"
    )


def _anchor(heading: str) -> str:
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes.
    return re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")


def test_operations_guide_covers_every_metric_and_runbook_link() -> None:
    text = (REPO / "docs" / "operations.md").read_text()
    documented = set(METRIC_RE.findall(text))
    # Histograms are documented by family name (without _bucket/_count/_sum).
    families = {
        re.sub(r"_(bucket|count|sum)$", "", name)
        if re.search(r"_(seconds|batch_size)_(bucket|count|sum)$", name)
        else name
        for name in exported_series_names()
    }
    assert families - documented == set()
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    for rule in rules():
        url = rule.get("annotations", {}).get("runbook_url")
        assert url, f"{rule.get('alert')} has no runbook_url"
        path, _, anchor = url.partition("#")
        assert path == "docs/operations.md" and anchor in anchors, url
    # Links to the docs from the deployment files (comments included) resolve too.
    for file in sorted(p for p in (REPO / "deploy").rglob("*") if p.is_file()):
        for anchor in re.findall(r"docs/operations\.md#([\w-]+)", file.read_text()):
            assert anchor in anchors, f"{file.relative_to(REPO)}: #{anchor}"
