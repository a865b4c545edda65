"""The one ordered pass over each partition's history that every output builds on.

All records of one (cluster, topic, partition) are ordered by (ts, controller_epoch, seq):
``ts`` first because ``seq`` restarts with every controller process, the epoch and seq to
break ties within a microsecond. Controller records (no topic) form one such history per
cluster. One window pass then carries forward what was known *before* each record: the
partition's phase, its leader, its ISR and its preferred leader. The outputs read it only
through their facts (``facts.py``), computed in the same pass, so the expensive shuffle and
sort happen once and the timeline is never stored.

Duplicates (the same controller_id, controller_epoch and seq) are dropped in the same pass: a
re-sent line repeats its ts too, so it sorts next to its original and ``dup`` marks every
usable copy but the first. Usable copies sort before bad or failed ones (a bad copy read first
must not make the good one the dropped one), and copies that differ in content sort by that
content, so which one counts does not depend on line order. A dropped copy carries nothing
forward: the next record's "before" values are those of the copy that counts.

For speed at scale the window is keyed by a 64-bit hash of (cluster, topic, partition): the
sort then compares longs, not strings (a collision needs ~2^32 partitions to be likely).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.analytics import schema as S

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# A partition's phase, for availability: what matters is whether it exists and has a leader.
ABSENT, NEW, ONLINE, OFFLINE, DELETING = 0, 1, 2, 3, 4
EXISTING = (ONLINE, OFFLINE)  # phases that count towards availability

PARTITION_KEY = ("cluster", "topic", "partition")
ORDER = ("ts", "controller_epoch", "seq", "controller_id")

# The tie-break among usable copies of one record id that differ: every column the pass
# reads of a record (anything else cannot change a result). Compared only on ties, so the
# sort pays for them only there, and no hash of the content is computed for every row.
CONTENT = (
    "kind", "to_state", "_phase_from", "event", "election", "leader", "leader_epoch", "replica",
    "isr",
)

# What the timeline keeps of each record (besides the derived columns).
KEPT = (
    "cluster", "topic", "partition", "ts", "seq", "controller_id", "controller_epoch", "kind",
    "to_state", "event", "election", "leader", "leader_epoch", "replica",
)


def _phase_of_state(state: Column) -> Column:
    from pyspark.sql import functions as F

    return (
        F.when(state == S.ONLINE_PARTITION, F.lit(ONLINE))
        .when(state == S.OFFLINE_PARTITION, F.lit(OFFLINE))
        .when(state == S.NEW_PARTITION, F.lit(NEW))
        .when(state == S.NON_EXISTENT_PARTITION, F.lit(ABSENT))
    ).cast("tinyint")


def phase_after() -> Column:
    """The phase a partition record leaves the partition in.

    An OnlinePartition record with leader -1 "can't happen", but if it does the partition
    has no leader and is unavailable. The OfflinePartition step of a topic deletion is the
    topic going away, not an outage; so is the one a TopicChange records (a topic whose znode
    was removed by hand: the only OfflinePartition step that event makes), and the one of a
    deletion a reassignment held back, made when the reassignment completes (under its
    event: the only OfflinePartition step those make).

    Any other OfflinePartition -> OfflinePartition step says nothing new: null, no phase. The
    controller writes it for a partition it already holds offline (a broker failure moves
    every partition without a live leader Offline again), and for a partition of a topic
    whose deletion a new controller starts over (it loads those partitions Offline, then
    deletes them under the event that made the deletion possible): that partition was
    already gone, and must not come back as an outage.
    """
    from pyspark.sql import functions as F

    c = F.col
    going = c("event").isin(*S.EV_OFFLINE_ONLY_TO_DELETE)
    offline = c("to_state") == S.OFFLINE_PARTITION
    return (
        F.when((c("to_state") == S.ONLINE_PARTITION) & (c("leader") == S.NO_LEADER),
               F.lit(OFFLINE))
        .when(offline & going, F.lit(DELETING))
        .when(offline & (c("from_state") == S.OFFLINE_PARTITION), F.lit(None))
        .otherwise(_phase_of_state(c("to_state")))
    ).cast("tinyint")


def _phase_from() -> Column:
    """The phase a partition record says the partition was in (used for its first record).

    NonExistentPartition -> OfflinePartition is no transition of Kafka's state machine: it is
    a new controller recording a partition it found without a live leader, which was so since
    before (an outage of unknown start, like a first record that leaves OfflinePartition)."""
    from pyspark.sql import functions as F

    c = F.col
    return F.when(
        (c("from_state") == S.NON_EXISTENT_PARTITION) & (c("to_state") == S.OFFLINE_PARTITION),
        F.lit(OFFLINE).cast("tinyint"),
    ).otherwise(_phase_of_state(c("from_state")))


def timeline(records: DataFrame) -> DataFrame:
    """``ingest.clean`` output in, one row per input row out, with carried-forward state.

    Besides ``KEPT`` and the bad-record columns (``bad_reason``, ``raw``, ``source_file``):

    - ``usable`` (valid and result ok), ``dup``, ``live`` (usable and not a duplicate: the
      records that count);
    - partition records: ``phase`` (null for a record that changes nothing: see
      ``phase_after``), ``phase_before`` (the previous record's phase, or the first record's
      ``from_state``), ``first`` (no earlier record of this partition with a phase),
      ``lead_before``/``lead_after`` (the leader while online, -1 without one),
      ``pref_before``/``pref_after`` (the preferred leader as far as the log tells: whom the
      latest preferred or reassignment election, or the partition's creation, chose);
    - partition and replica records: ``leader_before`` (last leader >= 0), ``isr_removed``
      and ``isr_added`` (null unless a usable record changed the ISR);
    - election records only: ``isr_before`` and ``isr`` (null unless usable and not empty);
    - replica records: ``went_offline``, a replica up until then taken OfflineReplica (not
      one already offline moved there again, and not its topic's deletion), and
      ``replica_going``, a step of its topic's deletion.

    An OfflinePartition step followed at once by the partition's NonExistentPartition step is
    its topic's deletion (phase DELETING, as under the events of ``phase_after``).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    is_part = c("kind") == S.KIND_PARTITION
    pref_hint = F.when(
        is_part
        & (c("to_state") == S.ONLINE_PARTITION)
        & (c("leader") >= 0)
        & (
            c("election").isin("preferred", "reassign")
            | c("from_state").isin(S.NEW_PARTITION, S.NON_EXISTENT_PARTITION)
        ),
        c("leader"),
    )
    phase = phase_after()
    usable = c("bad_reason").isNull() & (c("result") == S.RESULT_OK)
    bad = c("bad_reason").isNotNull()
    # Only what the pass and the outputs need crosses the shuffle, as narrow as it goes: the
    # bad-record columns as one struct (null on good rows), the ISR only where it says
    # something (usable and not empty: a partition not yet elected says nothing about
    # membership) and so not twice (as itself and as the carried value's input), and the
    # phase computed once, here.
    narrow = records.select(
        F.xxhash64(*PARTITION_KEY).alias("_pkey"),
        *KEPT,
        F.when(usable & (F.size("isr") > 0), c("isr")).alias("isr"),
        F.when(bad, F.struct("bad_reason", "raw", "source_file")).alias("_bad"),
        usable.alias("usable"),
        F.when(is_part, phase).alias("_phase"),
        # For a replica record, only whether it starts from OfflineReplica (else null).
        F.when(is_part, _phase_from())
        .when(c("from_state") == S.OFFLINE_REPLICA, F.lit(OFFLINE).cast("tinyint"))
        .alias("_phase_from"),
        F.when(usable & is_part, pref_hint).alias("_pref_hint"),
    )
    w = Window.partitionBy("_pkey").orderBy(*ORDER, c("usable").asc(), *CONTENT)
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    rid = F.xxhash64(*ORDER)
    # Usable copies sort last within a record id, so "the row after is a copy of the same
    # record" marks all usable copies but the last, the one that counts (a usable copy
    # counts before a bad one); its next row is the partition's next record, however many
    # copies there are.
    dup = c("usable") & F.coalesce(F.lead(rid).over(w) == rid, F.lit(False))
    # The deletion of a topic takes its partitions OfflinePartition, then at once
    # NonExistentPartition, under whatever event let the deletion go ahead (a new controller
    # resuming it, a broker's return), and that Offline step is the topic going away, not an
    # outage. (``_phase`` is ABSENT only on a partition's NonExistentPartition step: one
    # small value to look ahead at, not two strings.)
    next_gone = F.lead("_phase").over(w) == ABSENT
    narrow = narrow.select("*", dup.alias("dup"), next_gone.alias("_next_gone"))
    counted = c("usable") & ~c("dup")
    phase = F.when(
        (c("_phase") == OFFLINE) & (c("to_state") == S.OFFLINE_PARTITION)
        & F.coalesce(c("_next_gone"), F.lit(False)),
        F.lit(DELETING).cast("tinyint"),
    ).otherwise(c("_phase"))
    live_part = counted & phase.isNotNull()
    lead_now = F.when(phase == ONLINE, c("leader")).otherwise(F.lit(S.NO_LEADER))

    def carried(value: Column) -> Column:
        """The last non-null value among the records before this one."""
        return F.last(value, ignorenulls=True).over(before)

    t = narrow.select(
        "*",
        # phase << 32 | (leader + 1): two carried values for the price of one
        carried(F.when(live_part, F.shiftleft(phase.cast("long"), 32) + (lead_now + 1)))
        .alias("_state_before"),
        carried(F.when(counted & (c("leader") >= 0), c("leader"))).alias("leader_before"),
        carried(F.when(~c("dup"), c("isr"))).alias("_isr_before"),
        carried(F.when(~c("dup"), c("_pref_hint"))).alias("pref_before"),
    )
    # Most records leave the ISR as it was: compare first, take set differences only then. A
    # partition's creation (after a deletion of a topic of the same name too) changes no ISR,
    # nor do the replica steps of a deletion (the topic going away).
    phase_before = F.coalesce(
        F.shiftright(c("_state_before"), 32).cast("tinyint"), F.when(is_part, c("_phase_from"))
    )
    created = is_part & phase_before.isin(NEW, ABSENT)
    going = ~is_part & phase_before.isin(DELETING, ABSENT)
    changed = (
        c("isr").isNotNull()
        & c("_isr_before").isNotNull()
        & (c("isr") != c("_isr_before"))
        & ~F.coalesce(created | going, F.lit(False))
    )
    removed = F.array_except(c("_isr_before"), c("isr"))
    added = F.array_except(c("isr"), c("_isr_before"))
    state_before = c("_state_before")
    lead_before = (state_before.bitwiseAND(0xFFFFFFFF) - 1).cast("int")
    elected = c("election").isNotNull()
    return t.select(
        *KEPT,
        "usable",
        "dup",
        (c("usable") & ~c("dup")).alias("live"),
        F.when(is_part, phase).alias("phase"),
        F.when(is_part, phase_before).alias("phase_before"),
        # A record without a phase (see ``phase_after``) carries nothing forward, so the
        # next one is "first" too: both say the partition's phase before them (the same,
        # when the log agrees with itself), which counts once.
        F.when(is_part, state_before.isNull()).alias("first"),
        F.when(is_part, lead_before).alias("_lb"),
        F.when(is_part, F.when(phase.isNull(), lead_before).otherwise(lead_now))
        .alias("lead_after"),
        "pref_before",
        F.when(is_part, F.coalesce(c("_pref_hint"), c("pref_before"))).alias("pref_after"),
        "leader_before",
        F.when(changed, F.nullif(removed, F.array().cast("array<int>"))).alias("isr_removed"),
        F.when(changed, F.nullif(added, F.array().cast("array<int>"))).alias("isr_added"),
        F.when(elected, c("_isr_before")).alias("isr_before"),
        F.when(elected, c("isr")).alias("isr"),
        F.when(
            ~is_part,
            (c("to_state") == S.OFFLINE_REPLICA) & c("_phase_from").isNull()
            & ~F.coalesce(going, F.lit(False)),
        ).alias("went_offline"),
        F.when(~is_part, F.coalesce(going, F.lit(False))).alias("replica_going"),
        *[c("_bad").getField(name).alias(name) for name in ("bad_reason", "raw", "source_file")],
    ).withColumnRenamed("_lb", "lead_before")
