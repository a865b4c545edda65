"""Running the transforms on a hand-made log, for the tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from controller.analytics import outputs
from controller.analytics.ingest import clean, read_logs
from controller.analytics.transforms.period import periods
from controller.analytics.transforms.timeline import timeline

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class Analysis:
    timeline: DataFrame
    facts: DataFrame
    periods: DataFrame
    datasets: dict[str, outputs.Dataset]

    def __getitem__(self, name: str) -> DataFrame:
        return self.datasets[name].df


def analyze_lines(
    spark: SparkSession,
    tmp_path: Path,
    lines: list[str],
    start: datetime | None = None,
    end: datetime | None = None,
    name: str = "log.jsonl",
) -> Analysis:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tl = timeline(clean(read_logs(spark, [str(path)]))).cache()
    facts = outputs.facts(tl, start, end).cache()
    p = periods(tl, start, end).cache()
    return Analysis(tl, facts, p, outputs.build(facts, p, top_n=5))
