"""One Spark session for the whole run (the JVM takes seconds to start), plus log builders.

Without PySpark or Java these tests skip locally, and fail under ``CI=true``: CI installs the
``spark`` extra and a JRE, so a missing one there is a broken setup, not a reason to skip.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T0 = datetime(2026, 11, 22, 10, 0, 0, tzinfo=UTC)


def _unavailable(problem: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"Spark required under CI=true but unavailable: {problem}")
    pytest.skip(f"Spark unavailable (CI=true would fail here): {problem}")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    try:
        import pyspark
        import pyspark.testing  # noqa: F401  (imports pandas: fails on pandas >= 3)
    except ImportError as exc:
        _unavailable(f"cannot import pyspark ({exc}); install the 'spark' extra")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("no java on PATH and no JAVA_HOME (Spark 4 needs Java 17+)")
    from controller.analytics.session import get_session

    session = get_session(
        "local[2]",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "2g",
            "spark.sql.adaptive.coalescePartitions.enabled": "true",
        },
    )
    yield session
    session.stop()


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Log:
    """A controller's state-change log, built record by record as the controller writes it:
    ``seq`` counts up per controller process, times are seconds after ``T0``."""

    def __init__(self, cluster: str | None = "c1", controller_id: int = 1, epoch: int = 5) -> None:
        self.cluster = cluster
        self.controller_id = controller_id
        self.epoch = epoch
        self.seq = 0
        self.lines: list[str] = []

    def _emit(self, t: float, **fields: Any) -> str:
        self.seq += 1
        record: dict[str, Any] = {
            "ts": iso(at(t)),
            "seq": self.seq,
            "controller_id": self.controller_id,
            "controller_epoch": self.epoch,
            "kind": "partition",
            "topic": None,
            "partition": None,
            "replica": None,
            "from_state": None,
            "to_state": None,
            "leader": None,
            "leader_epoch": None,
            "isr": None,
            "election": None,
            "event": "BrokerChange",
            "result": "ok",
            "error": None,
        }
        record.update(fields)
        if self.cluster is not None:
            record["cluster"] = self.cluster
        line = json.dumps(record)
        self.lines.append(line)
        return line

    def part(
        self,
        t: float,
        topic: str,
        partition: int,
        frm: str,
        to: str,
        leader: int | None = None,
        isr: list[int] | None = None,
        election: str | None = None,
        event: str = "BrokerChange",
        leader_epoch: int | None = 0,
        result: str = "ok",
    ) -> str:
        return self._emit(
            t, kind="partition", topic=topic, partition=partition, from_state=frm, to_state=to,
            leader=leader, isr=isr, election=election, event=event, leader_epoch=leader_epoch,
            result=result,
        )

    def online(self, t: float, topic: str, partition: int, leader: int, isr: list[int],
               frm: str = "OfflinePartition", election: str | None = "offline",
               event: str = "BrokerChange") -> str:
        return self.part(t, topic, partition, frm, "OnlinePartition", leader, isr, election,
                         event)

    def offline(self, t: float, topic: str, partition: int, isr: list[int],
                frm: str = "OnlinePartition", event: str = "BrokerChange") -> str:
        return self.part(t, topic, partition, frm, "OfflinePartition", -1, isr, None, event)

    def create(self, t: float, topic: str, partition: int, replicas: list[int]) -> None:
        self.part(t, topic, partition, "NonExistentPartition", "NewPartition", None, None,
                  None, "TopicChange", None)
        self.part(t, topic, partition, "NewPartition", "OnlinePartition", replicas[0],
                  replicas, None, "TopicChange")

    def replica(self, t: float, topic: str, partition: int, replica: int, frm: str, to: str,
                leader: int, isr: list[int], event: str = "BrokerChange") -> str:
        return self._emit(
            t, kind="replica", topic=topic, partition=partition, replica=replica,
            from_state=frm, to_state=to, leader=leader, isr=isr, event=event, leader_epoch=0,
        )

    def controller(self, t: float, to: str, frm: str | None = None) -> str:
        return self._emit(t, kind="controller", from_state=frm, to_state=to,
                          event="ControllerChange")

    def new_controller(self, t: float, controller_id: int, ready_after: float = 1.0) -> None:
        """A new controller process wins the next epoch: its seq starts again at 1."""
        self.controller_id = controller_id
        self.epoch += 1
        self.seq = 0
        self.controller(t, "elected")
        self.controller(t + ready_after, "ready", "elected")

    def write(self, path: Path, lines: list[str] | None = None) -> Path:
        path.write_text("\n".join(self.lines if lines is None else lines) + "\n",
                        encoding="utf-8")
        return path
