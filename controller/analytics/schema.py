"""The state-change log's record schema and its vocabulary.

One JSON object per line, written by the controller (core control loop, item 8). This module
holds only names and the Spark schema; it imports pyspark lazily so that the generator and the
CLI can use the constants without Spark installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# Record kinds.
KIND_PARTITION = "partition"
KIND_REPLICA = "replica"
KIND_CONTROLLER = "controller"
KINDS = (KIND_PARTITION, KIND_REPLICA, KIND_CONTROLLER)

# Kafka partition states.
NEW_PARTITION = "NewPartition"
ONLINE_PARTITION = "OnlinePartition"
OFFLINE_PARTITION = "OfflinePartition"
NON_EXISTENT_PARTITION = "NonExistentPartition"

# Kafka replica states.
NEW_REPLICA = "NewReplica"
ONLINE_REPLICA = "OnlineReplica"
OFFLINE_REPLICA = "OfflineReplica"
REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
NON_EXISTENT_REPLICA = "NonExistentReplica"
PARTITION_STATES = (NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION, NON_EXISTENT_PARTITION)
REPLICA_STATES = (
    NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, REPLICA_DELETION_STARTED,
    REPLICA_DELETION_SUCCESSFUL, REPLICA_DELETION_INELIGIBLE, NON_EXISTENT_REPLICA,
)

# Controller lifecycle (to_state of controller records).
CONTROLLER_ELECTED = "elected"
CONTROLLER_READY = "ready"
CONTROLLER_RESIGNED = "resigned"
CONTROLLER_STATES = (CONTROLLER_ELECTED, CONTROLLER_READY, CONTROLLER_RESIGNED)

# Election kinds as logged, and the labels the outputs use for them.
ELECTION_LABELS = {
    "offline": "offline",
    "offline_unclean": "unclean",
    "preferred": "preferred",
    "reassign": "reassign",
    "controlled_shutdown": "controlled_shutdown",
}
ELECTION_TYPES = tuple(ELECTION_LABELS.values())

RESULT_OK = "ok"
RESULT_FAILED = "failed"
RESULT_INVALID = "invalid"  # a transition the state machine refused
NO_LEADER = -1

# Controller events the generator and the transforms refer to by name.
EV_BROKER_CHANGE = "BrokerChange"
EV_TOPIC_CHANGE = "TopicChange"
EV_TOPIC_DELETION = "TopicDeletion"
EV_CONTROLLED_SHUTDOWN = "ControlledShutdown"
EV_REASSIGNMENT = "ZkPartitionReassignment"
EV_PREFERRED = "ReplicaLeaderElection"
EV_AUTO_PREFERRED = "AutoPreferredReplicaLeaderElection"
EV_ISR_CHANGE = "IsrChangeNotification"
EV_ALTER_PARTITION = "AlterPartitionReceived"
EV_REELECT = "Reelect"
EV_CONTROLLER_CHANGE = "ControllerChange"
# Events in which the controller moves a partition OfflinePartition only to delete its topic:
# the deletion itself, a topic znode removed by hand, and a reassignment's completion or
# cancellation, which resumes the deletion of a topic it held back.
EV_OFFLINE_ONLY_TO_DELETE = (
    EV_TOPIC_DELETION, EV_TOPIC_CHANGE, EV_ALTER_PARTITION, "PartitionReassignmentIsrChange",
    EV_REASSIGNMENT, "ApiPartitionReassignment",
)
# The events a controller's failover (and so its records of the state it finds) runs in.
EV_FAILOVER = ("Startup", "Reelect", "ControllerChange", "RegisterBrokerAndReelect")

# Column holding the raw text of lines Spark could not parse.
CORRUPT_COLUMN = "_corrupt_record"

# (name, type) in file order. "cluster" is an optional extension to the controller's schema:
# the generator writes it; when a record lacks it, ingest derives it from the file's path.
FIELDS: tuple[tuple[str, str], ...] = (
    ("ts", "timestamp"),
    ("seq", "long"),
    ("controller_id", "int"),
    ("controller_epoch", "int"),
    ("kind", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("replica", "int"),
    ("from_state", "string"),
    ("to_state", "string"),
    ("leader", "int"),
    ("leader_epoch", "int"),
    ("isr", "array<int>"),
    ("election", "string"),
    ("event", "string"),
    ("result", "string"),
    ("error", "string"),
    ("cluster", "string"),
)

# Fields a record cannot be analysed without; a line missing any of them is a bad record.
REQUIRED = ("ts", "seq", "controller_id", "controller_epoch", "kind", "to_state", "result")


def input_schema(with_corrupt_column: bool = True) -> StructType:
    """The explicit read schema (no inference pass, no type drift between files)."""
    from pyspark.sql import types as T

    simple = {
        "timestamp": T.TimestampType(),
        "long": T.LongType(),
        "int": T.IntegerType(),
        "string": T.StringType(),
        "array<int>": T.ArrayType(T.IntegerType(), containsNull=False),
    }
    fields = [T.StructField(name, simple[typ], nullable=True) for name, typ in FIELDS]
    if with_corrupt_column:
        fields.append(T.StructField(CORRUPT_COLUMN, T.StringType(), nullable=True))
    return T.StructType(fields)
