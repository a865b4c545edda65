"""Running as a service: SIGHUP reloads the dynamic configuration and reopens the state-change
log (log rotation); SIGTERM stops with exit code 0. A real ``zk-controller run`` process on a
real ZooKeeper."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support import ControllerProcess, kazoo, wait_until

pytestmark = pytest.mark.zookeeper


def _lines(proc: ControllerProcess) -> list[dict[str, Any]]:
    out = []
    for line in proc.output().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _logged(proc: ControllerProcess, event: str) -> list[dict[str, Any]]:
    return [line for line in _lines(proc) if line.get("event") == event]


def test_sighup_reloads_dynamic_settings_and_reopens_the_state_change_log(
    zk_connect: str, tmp_path: Path
) -> None:
    config = tmp_path / "controller.toml"
    config.write_text('"log.level" = "INFO"\n"unclean.leader.election.enable" = false\n')
    proc = ControllerProcess(zk_connect, 1, tmp_path, extra=["--config", str(config)])
    try:
        proc.wait_serving()
        wait_until(lambda: proc.active() == 1, what="controller 1 active")
        scl = proc.state_change_log
        wait_until(scl.exists, what="state-change log created")

        # logrotate moves the file away, then signals.
        rotated = scl.with_name("state-change.log.1")
        scl.rename(rotated)
        config.write_text(
            '"log.level" = "DEBUG"\n"unclean.leader.election.enable" = true\n'
            '"request.timeout.ms" = 1234\n'  # static: reported, not applied
        )
        proc.signal(signal.SIGHUP)
        reloaded = wait_until(
            lambda: _logged(proc, "configuration reloaded"), what="reload logged"
        )[0]
        assert reloaded["changed"] == {
            "log.level": "DEBUG",
            "unclean.leader.election.enable": True,
        }
        restart = _logged(proc, "changed settings need a restart; they keep their running values")
        assert restart and restart[0]["settings"] == ["request.timeout.ms"]
        assert scl.exists()  # reopened at the original path
        # The cluster-wide unclean setting turning on queues Kafka's UncleanLeaderElectionEnable.
        wait_until(
            lambda: any(
                line.get("controller_event") == "UncleanLeaderElectionEnable"
                for line in _logged(proc, "processed event")
            ),
            what="UncleanLeaderElectionEnable processed",
        )
        # DEBUG is now on: debug lines appear (HTTP access lines of our own scrapes).
        proc.metrics()
        wait_until(
            lambda: any(line.get("level") == "debug" for line in _lines(proc)),
            what="a debug line after the reload",
        )

        # An invalid file is refused whole; the process keeps running with what it had.
        config.write_text('"log.level" = "LOUD"\n')
        proc.signal(signal.SIGHUP)
        failed = wait_until(
            lambda: _logged(proc, "configuration reload failed; keeping the running configuration"),
            what="failed reload logged",
        )[0]
        assert any("log.level" in problem for problem in failed["problems"])
        assert proc.active() == 1
        assert proc.proc.poll() is None
    finally:
        code = proc.terminate()
    assert code == 0
    assert _logged(proc, "controller stopped")


def test_first_controller_creates_a_missing_chroot(zk_connect: str, tmp_path: Path) -> None:
    # Kafka's createChrootIfNecessary: a fresh cluster's chroot does not exist yet.
    connect = f"{zk_connect}/cluster-a"
    proc = ControllerProcess(connect, 1, tmp_path)
    try:
        proc.wait_serving()
        wait_until(lambda: proc.active() == 1, what="controller 1 active under the new chroot")
        client = kazoo(zk_connect)
        try:
            assert client.exists("/cluster-a/controller") is not None
            assert client.exists("/cluster-a/zk-controller/controllers/1") is not None
        finally:
            client.stop()
            client.close()
    finally:
        assert proc.terminate() == 0
