"""Finding Debian's Prometheus binaries for tests, and the set of metric names the daemon
exports (for checking rules and dashboards against it).

A test that needs ``promtool`` or ``prometheus`` skips when they are missing, except under
``CI=true`` (or ``REQUIRE_PROMETHEUS=1``), where it fails: CI installs Debian's ``prometheus``
package (``.ci/run``, ``make prometheus-deps``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

from controller.core.controller_state import ControllerState
from controller.metrics import ELECTION_TYPES, REQUEST_KINDS, ControllerMetrics

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"


def _unavailable(problem: str) -> NoReturn:
    if (
        os.environ.get("CI", "").lower() in ("true", "1")
        or os.environ.get("REQUIRE_PROMETHEUS") == "1"
    ):
        pytest.fail(f"{problem} (required under CI=true: apt-get install prometheus)")
    pytest.skip(f"{problem}; install Debian's prometheus package (make prometheus-deps)")


def binary(name: str) -> str:
    """The path of ``promtool`` or ``prometheus``: $PATH, then Debian's /usr/bin."""
    debian = Path("/usr/bin") / name
    found = shutil.which(name) or (str(debian) if debian.exists() else None)
    if found is None:
        _unavailable(f"{name} not found")
    return found


def exported_series_names() -> set[str]:
    """Every sample name a controller exports once everything has been observed."""
    m = ControllerMetrics(controller_id=1, session_state_source=lambda: "CONNECTED")
    m.broker_added(1, lambda: 0)
    m.request_dequeued(1, 0.1)
    for kind in REQUEST_KINDS:
        m.request_sent(1, kind, 0.1)
    m.zookeeper_request("get", 0.001)
    m.zookeeper_batch("get_many", 10)
    m.observe_event_queue_time(0.1)
    m.observe_event_processing(ControllerState.BrokerChange, 0.1)
    for kind in ELECTION_TYPES:
        m.inc_leader_elections(kind)
    m.inc_event_errors("BrokerChange")
    m.watch_tls_certificate(lambda: 2e9)  # exported only with TLS on
    return {sample.name for family in m.registry.collect() for sample in family.samples}
