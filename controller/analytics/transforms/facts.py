"""Facts: the one aggregation every output is finished from.

The timeline (one row per record, after the ordered window pass) is far too big to keep: on
two cores building an in-memory copy of it costs more than computing it, and every output
scanning it again costs more still. So each output says, per timeline row, what it needs to
know as *facts* (small keyed values: "partition p had an election on day d", "broker b lost a
leadership in hour h", "this row is an edge of an offline interval"), and the job computes all
of them in one pass: the rows are exploded into their facts and one aggregation sums facts
with equal keys. What comes out grows with partitions x days, not with records (about one
row per ten records on the benchmark's log), and each output is finished from its own kind
of fact.

A fact is one struct of generic *slots*: key slots (grouped on) and value slots (summed,
minimised or maximised). Each kind of fact names the slots it uses (``Fact``), so emitters and
finishers speak of ``partition`` and ``elections``, not ``k`` and ``n1``. Facts that must stay
one row each (an offline interval's edge, an unclean election, a bad line) carry everything
in key slots and count themselves in a ``rows`` sum: identical ones are aggregated into one
fact and ``repeated`` gives each its row back.

Timestamps travel as epoch microseconds (longs); hours and days as bucket numbers since the
epoch in UTC, the session's time zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# Slot name -> Spark type. Keys are grouped on; sums, mins and maxes are aggregated.
KEY_SLOTS: dict[str, str] = {
    "topic": "string", "k": "int", "t": "long", "t2": "long",
    "x1": "int", "x2": "int", "x3": "int", "x4": "int", "x5": "int",
    "label": "string", "a1": "array<int>", "a2": "array<int>", "s1": "string", "s2": "string",
}
SUM_SLOTS = ("n1", "n2", "n3", "n4", "n5", "n6")
MIN_SLOTS = ("lo1", "lo2")
MAX_SLOTS = ("hi1",)
VALUE_SLOTS = (*SUM_SLOTS, *MIN_SLOTS, *MAX_SLOTS)

MICROS_PER_HOUR = 3_600_000_000
MICROS_PER_DAY = 24 * MICROS_PER_HOUR


@dataclass(frozen=True)
class Fact:
    """A kind of fact: its code, and what each slot it uses means (name -> slot)."""

    code: int
    name: str
    slots: dict[str, str]
    registry: ClassVar[dict[int, str]] = {}

    def __post_init__(self) -> None:
        unknown = set(self.slots.values()) - set(KEY_SLOTS) - set(VALUE_SLOTS)
        if unknown:
            raise ValueError(f"fact {self.name!r} uses unknown slots {sorted(unknown)}")
        taken = Fact.registry.setdefault(self.code, self.name)
        if taken != self.name:
            raise ValueError(f"fact code {self.code} is both {taken!r} and {self.name!r}")

    def emit(self, when: Column, **values: Column | int) -> Column:
        """The fact (an array of one struct) when ``when`` holds for the row, else an empty
        array: ``aggregate`` concatenates a row's facts, so a row yields only the facts it
        has (exploding null placeholders and filtering them out costs a row each)."""
        from pyspark.sql import functions as F

        missing = set(values) - set(self.slots)
        if missing:
            raise ValueError(f"fact {self.name!r} has no field(s) {sorted(missing)}")
        by_slot = {self.slots[name]: v for name, v in values.items()}
        # named_struct with cached name and constant literals: building ~20 facts of ~20
        # fields each is otherwise thousands of py4j calls before the job even starts.
        fields = [_const("f", "string"), _const(self.code, "tinyint")]
        for slot, typ in KEY_SLOTS.items():
            fields += [_const(slot, "string"), _value(by_slot.get(slot), typ)]
        for slot in VALUE_SLOTS:
            default = 0 if slot in SUM_SLOTS else None
            fields += [_const(slot, "string"), _value(by_slot.get(slot, default), "long")]
        return F.when(when, F.array(F.named_struct(*fields))).otherwise(_no_facts())

    def view(self, facts: DataFrame) -> DataFrame:
        """``cluster`` and this fact's fields by name, one row per aggregated fact."""
        from pyspark.sql import functions as F

        return facts.where(F.col("f") == self.code).select(
            "cluster", *[F.col(slot).alias(name) for name, slot in self.slots.items()]
        )


def _no_facts() -> Column:
    slots = [f"{slot} {typ}" for slot, typ in KEY_SLOTS.items()]
    slots += [f"{slot} long" for slot in VALUE_SLOTS]
    return _const((), f"array<struct<f tinyint, {', '.join(slots)}>>")


def _value(v: Column | int | None, typ: str) -> Column:
    from pyspark.sql import Column

    if isinstance(v, Column):
        return v.cast(typ)
    return _const(v, typ)


_CONSTANTS: dict[tuple[object, str, object], Column] = {}


def _const(value: object, typ: str) -> Column:
    """A typed literal, made once per Spark context."""
    from pyspark import SparkContext
    from pyspark.sql import functions as F

    key = (SparkContext._active_spark_context, typ, value)
    col = _CONSTANTS.get(key)
    if col is None:
        lit = F.array() if value == () else F.lit(value)
        col = _CONSTANTS[key] = lit.cast(typ)
    return col


def aggregate(timeline: DataFrame, emitted: list[Column]) -> DataFrame:
    """Every fact of every timeline row, equal keys aggregated: ``cluster``, ``f``, the key
    slots and the value slots."""
    from pyspark.sql import functions as F

    exploded = timeline.select(
        "cluster", F.explode(F.concat(*emitted)).alias("_fact")
    ).select("cluster", "_fact.*")
    return exploded.groupBy("cluster", "f", *KEY_SLOTS).agg(
        *[F.sum(s).alias(s) for s in SUM_SLOTS],
        *[F.min(s).alias(s) for s in MIN_SLOTS],
        *[F.max(s).alias(s) for s in MAX_SLOTS],
    )


def flag(cond: Column) -> Column:
    """1 where ``cond`` holds, else 0 (null counts as not holding): a count as a sum."""
    from pyspark.sql import functions as F

    return F.when(cond, 1).otherwise(0)


def repeated(view: DataFrame, count: str = "rows") -> DataFrame:
    """One row per original row of a fact kind that must stay one row each: identical rows
    were aggregated into one with ``count`` set to how many there were."""
    from pyspark.sql import functions as F

    return view.select(
        "*", F.explode(F.array_repeat(F.lit(0), F.col(count).cast("int"))).alias("_n")
    ).drop("_n", count)


# Bucket numbers and their times (UTC: the job's session time zone).
def micros(ts: Column) -> Column:
    from pyspark.sql import functions as F

    return F.unix_micros(ts)


def hour_of(us: Column) -> Column:
    from pyspark.sql import functions as F

    return F.floor(us / MICROS_PER_HOUR)


def day_of(us: Column) -> Column:
    from pyspark.sql import functions as F

    return F.floor(us / MICROS_PER_DAY)


def hour_start(hour: Column) -> Column:
    from pyspark.sql import functions as F

    return F.timestamp_micros(hour * MICROS_PER_HOUR)


def day_date(day: Column) -> Column:
    from pyspark.sql import functions as F

    return F.date_from_unix_date(day.cast("int"))


def timestamp(us: Column) -> Column:
    from pyspark.sql import functions as F

    return F.timestamp_micros(us)


@dataclass(frozen=True)
class Bounds:
    """The analysis period as the fact pass sees it: ``--from``/``--to`` if given.

    Without them a cluster's period is its log's span, which every record is inside of, so
    nothing needs filtering or clipping before the period is known.
    """

    start_us: int | None = None
    end_us: int | None = None

    def within(self, us: Column) -> Column:
        """Whether a record at ``us`` falls in the period."""
        from pyspark.sql import functions as F

        cond = F.lit(True)
        if self.start_us is not None:
            cond = cond & (us >= F.lit(self.start_us))
        if self.end_us is not None:
            cond = cond & (us <= F.lit(self.end_us))
        return cond

    def clip(self, us: Column) -> Column:
        """An event's time moved into the period: earlier ones happen at its start (they set
        the level it begins with). Later ones are dropped by ``not_after``."""
        from pyspark.sql import functions as F

        return us if self.start_us is None else F.greatest(us, F.lit(self.start_us))

    def not_after(self, us: Column) -> Column:
        from pyspark.sql import functions as F

        return F.lit(True) if self.end_us is None else us <= F.lit(self.end_us)


def bounds(start: datetime | None, end: datetime | None) -> Bounds:
    """``Bounds`` from ``--from``/``--to`` (naive datetimes are UTC)."""
    return Bounds(_us(start), _us(end))


def _us(t: datetime | None) -> int | None:
    if t is None:
        return None
    aware = t if t.tzinfo is not None else t.replace(tzinfo=UTC)
    return (aware - _EPOCH) // timedelta(microseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
