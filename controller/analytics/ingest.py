"""Reading state-change logs: the only place that touches input files.

``read_logs`` takes files, directories or globs on any Hadoop-compatible filesystem and reads
them with the explicit schema in PERMISSIVE mode, so a malformed line becomes a row with its
text in ``_corrupt_record`` instead of failing the job. ``clean`` (a pure transform) then
derives each record's cluster and decides which rows are bad records, and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from controller.analytics import schema as S

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

DEFAULT_CLUSTER = "default"
# ZooKeeper refuses these in a znode name, so no topic has them.
CONTROL_CHARACTERS = "".join(chr(i) for i in (*range(0x20), *range(0x7F, 0xA0)))


def _invalid_topic() -> Column:
    """A topic that cannot be a znode name (the controller's own rule, zk.paths.is_znode_name,
    plus ZooKeeper's refusal of control characters), or the text of a JSON object or array
    (Spark reads one in a string field as its text). Not Kafka's stricter naming rule: the
    controller manages, and logs, topics other tools or Kafka before 0.10 created (spaces,
    255 characters). String operations, not regular expressions: this runs for every record,
    and Spark's ``rlike`` turns each value into a Java string first (~9 s on 10M records)."""
    from pyspark.sql import functions as F

    topic = F.col("topic")
    return (
        (topic == "")
        | topic.contains("/")
        | topic.isin(".", "..")
        | (topic.startswith("{") & topic.endswith("}"))
        | (topic.startswith("[") & topic.endswith("]"))
        | (F.length(F.translate(topic, CONTROL_CHARACTERS, "")) != F.length(topic))
    )


def read_logs(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """The raw rows of every input line, plus ``source_file``.

    A directory is read with everything under it (``recursiveFileLookup``): logs kept in
    per-cluster or per-day subdirectories are read, and Spark's partition discovery, which
    would fail on a directory holding both files and subdirectories and would let a
    ``cluster=NAME`` directory override the records' own ``cluster``, is off. Files whose
    names start with ``.`` or ``_`` are skipped, as Spark always does.

    ``input_file_name()`` rather than the ``_metadata.file_path`` column: the metadata column is
    materialised into every row by the scan (about 5 s of the 10M-record benchmark), while
    this expression is evaluated only where it is used, for bad or cluster-less records.
    """
    from pyspark.sql import functions as F

    return (
        spark.read.schema(S.input_schema())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", S.CORRUPT_COLUMN)
        .option("recursiveFileLookup", "true")
        .json(list(paths))
        .withColumn("source_file", F.input_file_name())
    )


def cluster_from_path(path: Column) -> Column:
    """A cluster name for records that carry none.

    ``.../cluster=NAME/...`` wins; otherwise the file name up to its first dot
    (``prod-eu-1.jsonl`` is ``prod-eu-1``), except the controller's own log names
    (``state-change.log``, ``state-change.log.3``), which say nothing: those are "default".
    """
    from pyspark.sql import functions as F

    # The path is a URI (``file:///logs/eu%20west.jsonl``): decode its %XX escapes, but keep
    # a literal '+', which URL decoding would turn into a space.
    path = F.coalesce(F.try_url_decode(F.replace(path, F.lit("+"), F.lit("%2B"))), path)
    hive = F.regexp_extract(path, r"cluster=([^/]+)", 1)
    stem = F.regexp_extract(path, r"([^/.]+)[^/]*$", 1)
    return (
        F.when(hive != "", hive)
        .when((stem == "") | stem.startswith("state-change"), F.lit(DEFAULT_CLUSTER))
        .otherwise(stem)
    )


TS_MIN_MICROS = 946_684_800_000_000  # 2000-01-01T00:00:00Z
TS_MAX_MICROS = 253_402_300_800_000_000  # 10000-01-01T00:00:00Z


def _bad_reason() -> Column:
    from pyspark.sql import functions as F

    c = F.col
    reason = F.when(c(S.CORRUPT_COLUMN).isNotNull(), F.lit("unparseable"))
    for name in S.REQUIRED:
        reason = reason.when(c(name).isNull(), F.lit(f"missing {name}"))
    # A number in ts is read as epoch seconds (milliseconds then land past year 9999, where
    # Python's datetime ends and the job died; 12345 stretched the period back to 1970): no
    # controller log is from before 2000 or after 9999.
    ts_micros = F.unix_micros(c("ts"))
    return (
        reason.when(
            (ts_micros < TS_MIN_MICROS) | (ts_micros >= TS_MAX_MICROS),
            F.lit("ts out of range (2000-01-01 to 9999-12-31)"),
        )
        .when(~c("kind").isin(*S.KINDS), F.lit("unknown kind"))
        .when(
            c("kind").isin(S.KIND_PARTITION, S.KIND_REPLICA)
            & (c("topic").isNull() | c("partition").isNull()),
            F.lit("missing topic or partition"),
        )
        .when((c("kind") != S.KIND_CONTROLLER) & _invalid_topic(), F.lit("invalid topic name"))
        .when((c("kind") == S.KIND_REPLICA) & c("replica").isNull(), F.lit("missing replica"))
        .when(
            (c("kind") == S.KIND_PARTITION) & _unknown_state(S.PARTITION_STATES),
            F.lit("unknown partition state"),
        )
        .when(
            (c("kind") == S.KIND_REPLICA) & _unknown_state(S.REPLICA_STATES),
            F.lit("unknown replica state"),
        )
        .when(
            (c("kind") == S.KIND_CONTROLLER) & ~c("to_state").isin(*S.CONTROLLER_STATES),
            F.lit("unknown controller state"),
        )
        .when(
            c("election").isNotNull() & ~c("election").isin(*S.ELECTION_LABELS),
            F.lit("unknown election"),
        )
    )


def _unknown_state(states: tuple[str, ...]) -> Column:
    """``to_state`` not one of ``states``, or a ``from_state`` that is neither null (the
    state machine's first step) nor one of them."""
    from pyspark.sql import functions as F

    c = F.col
    return ~c("to_state").isin(*states) | (
        c("from_state").isNotNull() & ~c("from_state").isin(*states)
    )


def clean(raw: DataFrame) -> DataFrame:
    """Every row, with ``cluster`` filled in and ``bad_reason`` (null for a usable record).

    Bad rows keep their text in ``raw``: the line itself when it did not parse, else the
    record re-serialised.
    """
    from pyspark.sql import functions as F

    path = F.col("source_file") if "source_file" in raw.columns else F.lit("")
    fields = [name for name, _ in S.FIELDS]
    return (
        raw.withColumn("cluster", F.coalesce(F.col("cluster"), cluster_from_path(path)))
        .withColumn("bad_reason", _bad_reason())
        .withColumn(
            "raw",
            F.when(
                F.col("bad_reason").isNotNull(),
                F.coalesce(F.col(S.CORRUPT_COLUMN), F.to_json(F.struct(*fields))),
            ),
        )
        .withColumn("source_file", path)
        .drop(S.CORRUPT_COLUMN)
    )
