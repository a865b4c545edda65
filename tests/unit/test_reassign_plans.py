"""Reassignment plans for the CLI (``controller.admin.reassignment``): Kafka's JSON formats and
kafka-reassign-partitions.sh's checks, the generated placement, the legacy znode, and the
progress report, on an in-memory ZooKeeper."""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from collections.abc import Iterator

import pytest

from controller.admin import reassignment as plans
from controller.admin.assignment import (
    AdminError,
    IncompleteRackInfoError,
    InvalidReplicationFactorError,
)
from controller.admin.controller_client import NoActiveControllerError
from controller.cli.admin_common import NO_AUTH_HINT
from controller.core.model import ReplicaAssignment, TopicAssignment, TopicPartition
from controller.zk import codecs, paths
from controller.zk.errors import ConnectionLossError, NoAuthError
from controller.zk.memory import MemoryZooKeeper
from controller.zk.memory_session import MemoryZkSession
from tests.harness import make_broker


def tp(topic: str, p: int) -> TopicPartition:
    return TopicPartition(topic, p)


# -- parsing --------------------------------------------------------------------------------


def test_topics_to_move() -> None:
    text = '{"topics": [{"topic": "foo"}, {"topic": "bar"}], "version": 1}'
    assert plans.parse_topics_to_move(text) == ["foo", "bar"]
    assert plans.parse_topics_to_move('{"topics":[{"topic":"foo"}]}') == ["foo"]  # version 1


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"version":2,"topics":[{"topic":"foo"}]}', "unsupported version field value 2"),
        ('{"version":"1","topics":[]}', "unsupported version field value '1'"),
        ('{"topics":[]}', "lists no topics"),
        ('{"topics":{"topic":"foo"}}', '"topics" must be a JSON array'),
        ('{"topics":[{"name":"foo"}]}', 'topics[0]: expected an object with a string "topic"'),
        ('{"topics":[{"topic":"a b"}]}', "topics[0]: topic name 'a b' is illegal"),
        ('{"topics":[{"topic":"foo"},{"topic":"foo"}]}', "duplicate entries: foo"),
    ],
)
def test_topics_to_move_errors(text: str, fragment: str) -> None:
    with pytest.raises(plans.InvalidPlanError) as info:
        plans.parse_topics_to_move(text)
    assert fragment in str(info.value)


def test_broker_list() -> None:
    assert plans.parse_broker_list("1,2,3") == [1, 2, 3]
    assert plans.parse_broker_list(" 3 , 1") == [3, 1]
    for text, fragment in (
        ("1,,2", "'' is not a broker id"),
        ("1,x", "'x' is not a broker id"),
        ("-1", "'-1' is not a broker id"),
        ("1,2,1", "duplicate entries: 1"),
        ("99999999999", "expected an integer in"),
    ):
        with pytest.raises(plans.InvalidPlanError) as info:
            plans.parse_broker_list(text)
        assert fragment in str(info.value), text


def test_reassignment_json() -> None:
    text = json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": "foo", "partition": 1, "replicas": [3, 1], "log_dirs": ["any", "any"]},
                {"topic": "foo", "partition": 0, "replicas": [2]},
            ],
        }
    )
    assert plans.parse_reassignment_json(text) == {tp("foo", 1): (3, 1), tp("foo", 0): (2,)}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{", "the reassignment JSON is not valid JSON"),
        ({"version": 1}, "partition reassignment list cannot be empty"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": []}]},
         "partition replica list cannot be empty: t-0"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 1]}]},
         "partition replica lists may not contain duplicate entries: "
         "t-0 contains multiple entries for 1"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1]},
                         {"topic": "t", "partition": 0, "replicas": [2]}]},
         "partition reassignment contains duplicate topic partitions: t-0"),
        ({"partitions": [{"topic": "t", "partition": -1, "replicas": [1]}]},
         "partitions[0].partition: expected an integer in [0, 2147483647], got -1"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [-1]}]},
         "partitions[0].replicas: expected an integer in [0, 2147483647], got -1"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": "1,2"}]},
         'partitions[0] (t-0): "replicas" must be an array'),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2],
                          "log_dirs": ["any"]}]},
         "size of replicas list [1, 2] is different from size of log dirs list ['any']"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["/d"]}]},
         "moving replicas between log directories is not supported"),
        ({"partitions": [{"partition": 0, "replicas": [1]}]},
         'partitions[0]: expected an object with a string "topic"'),
    ],
)  # fmt: skip
def test_reassignment_json_errors(doc: object, message: str) -> None:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    with pytest.raises(plans.InvalidPlanError) as info:
        plans.parse_reassignment_json(text)
    assert message in str(info.value)


def test_unknown_fields_are_ignored_as_kafkas_tool_does() -> None:
    text = '{"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "leader": 1}]}'
    assert plans.parse_reassignment_json(text) == {tp("t", 0): (1,)}


def test_verify_and_cancel_read_a_plan_without_executes_checks() -> None:
    """Kafka's verify and cancel parse the plan without execute's checks: a plan that moved
    log dirs, listed a partition twice or has an empty list can still be checked."""
    doc = {"partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d1", "any"]},
        {"topic": "t", "partition": 0, "replicas": [1, 2]},
        {"topic": "t", "partition": 1, "replicas": []},
    ]}  # fmt: skip
    text = json.dumps(doc)
    with pytest.raises(plans.InvalidPlanError):
        plans.parse_reassignment_json(text)
    assert plans.parse_reassignment_json(text, for_execute=False) == {
        tp("t", 0): (1, 2), tp("t", 1): (),
    }  # fmt: skip


def test_format_is_kafkas_compact_sorted_json_and_parses_back() -> None:
    assignment = {tp("b", 0): (1,), tp("a", 10): (2, 3), tp("a", 2): (3, 1)}
    text = plans.format_reassignment_json(assignment)
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":2,"replicas":[3,1],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":10,"replicas":[2,3],"log_dirs":["any","any"]},'
        '{"topic":"b","partition":0,"replicas":[1],"log_dirs":["any"]}]}'
    )
    assert plans.parse_reassignment_json(text) == assignment


# -- the cluster, on an in-memory ZooKeeper ------------------------------------------------


@pytest.fixture
def zk() -> Iterator[MemoryZkSession]:
    session = MemoryZooKeeper().open_session()
    yield session


def register(zk: MemoryZkSession, broker_id: int, rack: str | None = None) -> None:
    broker = make_broker(broker_id, rack=rack)
    reg = codecs.BrokerRegistration(broker_id, broker.endpoints, broker.rack)
    zk.create(paths.broker_path(broker_id), codecs.encode_broker_registration(reg), makepath=True)


def topic(zk: MemoryZkSession, name: str, partitions: dict[int, list[int]]) -> None:
    assignment = TopicAssignment(
        name, None, {p: ReplicaAssignment(tuple(r)) for p, r in partitions.items()}
    )
    zk.create(paths.topic_path(name), codecs.encode_topic_assignment(assignment), makepath=True)


def test_generate_keeps_partition_count_and_replication_factor(zk: MemoryZkSession) -> None:
    for b in range(1, 6):
        register(zk, b)
    topic(zk, "foo", {p: [1, 2] for p in range(6)})
    topic(zk, "bar", {0: [1, 2, 3]})
    current, proposed = plans.generate_assignment(
        zk, ["foo", "bar"], [3, 4, 5], rng=random.Random(7)
    )
    assert current == {**{tp("foo", p): (1, 2) for p in range(6)}, tp("bar", 0): (1, 2, 3)}
    assert set(proposed) == set(current)
    for t, replicas in proposed.items():
        assert len(replicas) == len(current[t])
        assert len(set(replicas)) == len(replicas)
        assert set(replicas) <= {3, 4, 5}
    # Kafka's round-robin placement spreads preferred leaders evenly.
    leaders = Counter(proposed[tp("foo", p)][0] for p in range(6))
    assert sorted(leaders.values()) == [2, 2, 2]


def test_generate_refusals(zk: MemoryZkSession) -> None:
    register(zk, 1, rack="a")
    register(zk, 2)
    topic(zk, "foo", {0: [1, 2]})
    with pytest.raises(plans.UnknownPartitionError, match=r"topic\(s\) nope do not exist"):
        plans.generate_assignment(zk, ["foo", "nope"], [1, 2])
    with pytest.raises(plans.UnknownBrokerError, match=r"unregistered broker\(s\) 7"):
        plans.generate_assignment(zk, ["foo"], [1, 7])
    with pytest.raises(IncompleteRackInfoError):
        plans.generate_assignment(zk, ["foo"], [1, 2])
    _, proposed = plans.generate_assignment(zk, ["foo"], [1, 2], rack_aware=False)
    assert sorted(proposed[tp("foo", 0)]) == [1, 2]
    with pytest.raises(InvalidReplicationFactorError):
        plans.generate_assignment(zk, ["foo"], [2], rack_aware=False)


def test_validate_plan(zk: MemoryZkSession) -> None:
    register(zk, 1)
    register(zk, 2)
    topic(zk, "foo", {0: [1], 1: [2]})
    current = plans.validate_plan(zk, {tp("foo", 1): (1, 2)})
    assert current == {tp("foo", 1): ReplicaAssignment((2,))}
    with pytest.raises(plans.UnknownPartitionError, match=r"foo-2, zz-0"):
        plans.validate_plan(zk, {tp("zz", 0): (1,), tp("foo", 2): (1,), tp("foo", 0): (2,)})
    with pytest.raises(plans.UnknownBrokerError, match=r"unknown broker id\(s\) 3,4"):
        plans.validate_plan(zk, {tp("foo", 0): (4, 1, 3)})


def test_validate_plan_refuses_partitions_of_a_topic_being_deleted(zk: MemoryZkSession) -> None:
    # Refused before anything is submitted: the controller would start the rest of the plan
    # and answer UNKNOWN_TOPIC_OR_PARTITION for these only.
    register(zk, 1)
    register(zk, 2)
    topic(zk, "foo", {0: [1], 1: [2]})
    topic(zk, "bar", {0: [1]})
    zk.create(paths.delete_topic_path("foo"), b"", makepath=True)
    with pytest.raises(plans.UnknownPartitionError, match=r"marked for deletion .*: foo-0, foo-1$"):
        plans.validate_plan(zk, {tp("bar", 0): (2,), tp("foo", 1): (1,), tp("foo", 0): (2,)})
    assert plans.validate_plan(zk, {tp("bar", 0): (2,)}) == {tp("bar", 0): ReplicaAssignment((1,))}


def test_validate_plan_looks_up_deletion_once_per_topic(
    zk: MemoryZkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plan of thousands of partitions must not cost a ZooKeeper round trip per partition.
    register(zk, 1)
    topic(zk, "foo", {p: [1] for p in range(50)})
    topic(zk, "bar", {0: [1]})
    looked_up: Counter[str] = Counter()
    real_exists = zk.exists

    def counting_exists(path: str, *args: object, **kwargs: object) -> object:
        if path.startswith(paths.DELETE_TOPICS):
            looked_up[path] += 1
        return real_exists(path, *args, **kwargs)

    monkeypatch.setattr(zk, "exists", counting_exists)
    plan = {tp("foo", p): (1,) for p in range(50)} | {tp("bar", 0): (1,)}
    assert len(plans.validate_plan(zk, plan)) == 51
    assert looked_up == Counter(
        {paths.delete_topic_path("foo"): 1, paths.delete_topic_path("bar"): 1}
    )


def test_legacy_znode_is_created_once(zk: MemoryZkSession) -> None:
    plan = {tp("foo", 1): (2, 1), tp("foo", 0): (1,)}
    plans.write_reassignment_znode(zk, plan)
    data, _ = zk.get(paths.REASSIGN_PARTITIONS)
    assert json.loads(data) == {
        "version": 1,
        "partitions": [
            {"topic": "foo", "partition": 0, "replicas": [1]},
            {"topic": "foo", "partition": 1, "replicas": [2, 1]},
        ],
    }
    assert plans.read_reassignment_znode(zk) == (plan, None)
    with pytest.raises(plans.ReassignmentInProgressError, match="existing assignment running"):
        plans.write_reassignment_znode(zk, {tp("foo", 0): (2,)})
    # The same plan again is refused too: only a create whose resend met its own first
    # attempt (after the existence check) is taken as ours.
    with pytest.raises(plans.ReassignmentInProgressError, match="existing assignment running"):
        plans.write_reassignment_znode(zk, plan)
    zk.set(paths.REASSIGN_PARTITIONS, b"{oops")
    entries, problem = plans.read_reassignment_znode(zk)
    assert entries == {}
    assert problem is not None and paths.REASSIGN_PARTITIONS in problem
    # Refused still, but not as "an existing assignment running": nothing runs, and the
    # operator is told what to delete.
    with pytest.raises(plans.ReassignmentInProgressError) as refused:
        plans.write_reassignment_znode(zk, plan)
    assert str(refused.value).startswith(
        "/admin/reassign_partitions exists but is malformed, so nothing is running"
    )
    assert "delete /admin/reassign_partitions" in str(refused.value)


def test_progress_lines_are_kafkas(zk: MemoryZkSession) -> None:
    topic(zk, "foo", {0: [3], 1: [1, 2], 2: [2, 1, 4]})
    zk.create(
        paths.partition_state_path("foo", 2),
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":3,"isr":[2,1]}',
        makepath=True,
    )
    plan = {tp("foo", 0): (3,), tp("foo", 1): (3,), tp("foo", 2): (4, 2), tp("gone", 0): (1,)}
    ongoing = {tp("foo", 2): ReplicaAssignment((4, 2, 1), (4,), (1,))}
    progress = plans.partition_progress(zk, plan, ongoing)
    assert plans.format_progress(progress).splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 is completed.",
        "There is no active reassignment of partition foo-1, but replica set is 1,2 rather than 3.",
        "Reassignment of partition foo-2 is still in progress.",
        "\treplicas: 4,2,1  adding: 4  removing: 1  isr: 2,1  (0 of 1 adding replicas in sync)",
        "There is no active reassignment of partition gone-0, but replica set is  rather than 1.",
    ]
    assert [p.completed for p in progress.values()] == [True, False, False, False]
    assert progress[tp("foo", 2)].to_json()["in_progress"] is True


def test_ongoing_listing_is_kafkas() -> None:
    assert plans.format_ongoing({}) == "No partition reassignments found."
    ongoing = {
        tp("foo", 1): ReplicaAssignment((1, 2, 3), (), (3,)),
        tp("foo", 0): ReplicaAssignment((4, 1), (4,), (1,)),
    }
    assert plans.format_ongoing(ongoing).splitlines() == [
        "Current partition reassignments:",
        "foo-0: replicas: 4,1. adding: 4. removing: 1.",
        "foo-1: replicas: 1,2,3. removing: 3.",
    ]


# -- a failed execute that may have left throttles -------------------------------------------

STAY = (
    "the replication throttles this execute set stay: `reassign verify` with this plan clears "
    "them once nothing is moving"
)


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (AdminError("error reassigning partition(s): t-0: UNKNOWN_TOPIC_OR_PARTITION"),
         f"error reassigning partition(s): t-0: UNKNOWN_TOPIC_OR_PARTITION; {STAY}"),
        (ConnectionLossError(path="/config/brokers/1"),
         f"ZooKeeper request failed: CONNECTIONLOSS for /config/brokers/1; {STAY}"),
        (NoAuthError(path="/config/brokers/1"),
         f"ZooKeeper request failed: NOAUTH for /config/brokers/1; {STAY}; {NO_AUTH_HINT}"),
        (NoActiveControllerError("could not reach the active controller"),
         f"could not reach the active controller; {STAY}"),
    ],
)  # fmt: skip
def test_a_failure_after_throttles_were_set_says_how_to_clear_them(
    failure: Exception, message: str
) -> None:
    from controller.cli.reassign_cmd import _throttles_left_reported

    throttled = argparse.Namespace(throttle=1000)
    with pytest.raises(AdminError) as reported, _throttles_left_reported(throttled):
        raise failure
    assert str(reported.value) == message
    # Without --throttle nothing was throttled: the failure is reported as it was.
    unthrottled = argparse.Namespace(throttle=None)
    with pytest.raises(type(failure)) as unchanged, _throttles_left_reported(unthrottled):
        raise failure
    assert unchanged.value is failure
