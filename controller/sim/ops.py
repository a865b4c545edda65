# mypy: disable-error-code="misc"
# A mixin of World whose methods take `self: World`, which mypy allows only for a supertype.
"""Operations and faults applied to a simulated cluster (a mixin of ``World``).

Each ``op_*`` method is one thing somebody does to the cluster: an admin tool (topics,
reassignments, elections, written to ZooKeeper the way Kafka's tools do or sent as admin RPCs
to the active controller), a broker (an ISR change through AlterPartition, a controlled
shutdown), or a fault (crashes, session expiries, connection losses, stalls, a zombie
controller). Requests that change assignments are reported to the observer *before* they are
made, so every topic znode version can be explained. An operation that makes no sense in the
current state (restarting a running broker, deleting an unknown topic) does nothing, as the
admin tool or the operator would refuse it.

``random_op`` draws one operation with its arguments from the world's seeded generator.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from controller.admin.assignment import AdminError
from controller.admin.configs import alter_broker_default_config, alter_topic_config
from controller.core.election import UNCLEAN_CONFIG
from controller.core.events import (
    AllocateProducerIds,
    AlterPartitionReceived,
    ApiPartitionReassignment,
    ControlledShutdown,
    ElectionTrigger,
    ElectionType,
    ReplicaLeaderElection,
)
from controller.core.model import ReplicaAssignment, TopicAssignment, TopicPartition
from controller.invariants import AssignmentRequest
from controller.sim.brokers import registration
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError

if TYPE_CHECKING:
    from controller.sim.world import SimController, World

#: Kafka's controlled.shutdown.max.retries: attempts before the broker stops anyway.
CONTROLLED_SHUTDOWN_ATTEMPTS = 3

#: Relative weights of the operations ``random_op`` draws.
WEIGHTS: dict[str, int] = {
    "create_topic": 4,
    "add_partitions": 2,
    "delete_topic": 2,
    "reassign": 4,
    "cancel_reassignment": 1,
    "elect": 3,
    "alter_topic_config": 2,
    "alter_broker_default": 1,
    "alter_isr": 6,
    "controlled_shutdown": 3,
    "allocate_producer_ids": 4,
    "crash_broker": 3,
    "kill_broker": 3,
    "restart_broker": 6,
    "expire_broker": 2,
    "pause_broker": 2,
    "lose_answers": 2,
    "crash_controller": 2,
    "restart_controller": 3,
    "expire_controller": 3,
    "disconnect_controller": 2,
    "stall_controller": 2,
    "zombie_controller": 2,
    "malformed_topic": 1,
    "repair_topics": 1,
    "malformed_registration": 1,
    "malformed_admin_request": 1,
}


class Operations:
    """The ``op_*`` methods of ``World`` (see the module doc)."""

    # -- helpers -----------------------------------------------------------------------------

    def _topic_assignment(self: World, topic: str) -> TopicAssignment | None:
        data = self.zk.read(paths.topic_path(topic))
        if data is None:
            return None
        try:
            return codecs.decode_topic_assignment(topic, data, paths.topic_path(topic))
        except MalformedZnodeError:
            return None

    def _topics(self: World) -> list[str]:
        return self.zk.children(paths.BROKERS_TOPICS)

    def _replicas(self: World, count: int) -> tuple[int, ...]:
        return tuple(self.rng.sample(sorted(self.brokers), count))

    def _new_topic_id(self: World) -> str:
        while True:
            raw = self.rng.getrandbits(128).to_bytes(16, "big")
            text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
            if not text.startswith("-"):
                return text

    def _call_active(self: World, event: Any) -> SimController | None:
        """Send an RPC's event to the active controller; None when no controller takes it."""
        sc = self.active_controller()
        if sc is None or sc.ctl is None:
            return None
        sc.ctl.put(event)
        return sc

    def _reply_later(self: World, event: Any, continuation: Any) -> None:
        # The reply future is resolved on the controller's event "thread"; the broker reacts
        # later, as one of the scheduler's actions.
        event.reply.add_done_callback(lambda fut: self.replies.append(lambda: continuation(fut)))

    # -- admin -------------------------------------------------------------------------------

    def op_create_topic(
        self: World, topic: str | None = None, partitions: int = 1, replication: int = 2
    ) -> None:
        topic = topic or f"t{next(self.topic_seq)}"
        if self.zk.read(paths.topic_path(topic)) is not None:
            return
        if self.zk.read(paths.delete_topic_path(topic)) is not None:
            return  # Kafka's tool refuses a topic still marked for deletion
        rf = max(1, min(replication, len(self.brokers)))
        assignment = {p: self._replicas(rf) for p in range(max(1, partitions))}
        self.log(f"admin creates {topic} {assignment}")
        self.observer.on_request(AssignmentRequest("create", topic, assignment))
        data = codecs.encode_topic_assignment(
            TopicAssignment(
                topic,
                self._new_topic_id(),
                {p: ReplicaAssignment(r) for p, r in assignment.items()},
            )
        )
        self.admin.create(paths.topic_path(topic), data, makepath=True)

    def op_add_partitions(self: World, topic: str, count: int = 1) -> None:
        current = self._topic_assignment(topic)
        if current is None or self.zk.read(paths.delete_topic_path(topic)) is not None:
            return
        rf = len(next(iter(current.partitions.values())).replicas) if current.partitions else 1
        start = max(current.partitions, default=-1) + 1
        added = {p: self._replicas(rf) for p in range(start, start + max(1, count))}
        self.log(f"admin adds partitions to {topic}: {added}")
        self.observer.on_request(AssignmentRequest("add_partitions", topic, added))
        merged = dict(current.partitions)
        merged.update({p: ReplicaAssignment(r) for p, r in added.items()})
        data = codecs.encode_topic_assignment(TopicAssignment(topic, current.topic_id, merged))
        self.admin.set(paths.topic_path(topic), data)

    def op_delete_topic(self: World, topic: str) -> None:
        if self.zk.read(paths.topic_path(topic)) is None:
            return
        if self.zk.read(paths.delete_topic_path(topic)) is not None:
            return
        self.log(f"admin deletes {topic}")
        self.observer.on_request(AssignmentRequest("delete", topic))
        self.admin.create(paths.delete_topic_path(topic), makepath=True)

    def op_reassign(
        self: World, topic: str, partition: int, target: tuple[int, ...], via_zk: bool
    ) -> None:
        tp = TopicPartition(topic, partition)
        if via_zk and self.zk.read(paths.REASSIGN_PARTITIONS) is not None:
            return  # the tool refuses while a ZooKeeper reassignment is pending
        self.log(f"admin reassigns {tp} to {list(target)} via {'ZooKeeper' if via_zk else 'API'}")
        self.observer.on_request(AssignmentRequest("reassign", topic, {partition: target}))
        if via_zk:
            data = codecs.encode_reassignment({tp: target})
            self.admin.create(paths.REASSIGN_PARTITIONS, data, makepath=True)
        else:
            self._call_active(ApiPartitionReassignment(reassignments={tp: target}))

    def op_cancel_reassignment(self: World, topic: str, partition: int) -> None:
        self.log(f"admin cancels the reassignment of {topic}-{partition}")
        self.observer.on_request(AssignmentRequest("cancel", topic, {partition: ()}))
        self._call_active(
            ApiPartitionReassignment(reassignments={TopicPartition(topic, partition): None})
        )

    def op_elect(
        self: World, partitions: list[TopicPartition], unclean: bool, via_zk: bool
    ) -> None:
        kind = "unclean" if unclean else "preferred"
        self.log(f"admin asks a {kind} election of {[str(tp) for tp in partitions]}")
        if unclean:
            for tp in partitions:
                self.observer.on_unclean_request(tp.topic, tp.partition)
        if via_zk and not unclean:
            if self.zk.read(paths.PREFERRED_REPLICA_ELECTION) is None:
                data = codecs.encode_preferred_replica_election(partitions)
                self.admin.create(paths.PREFERRED_REPLICA_ELECTION, data, makepath=True)
            return
        self._call_active(
            ReplicaLeaderElection(
                partitions=frozenset(partitions),
                election_type=ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED,
                trigger=ElectionTrigger.ADMIN_CLIENT_TRIGGERED,
            )
        )

    def op_alter_topic_config(self: World, topic: str, unclean: bool) -> None:
        """kafka-configs.sh: the topic's unclean.leader.election.enable, with the production
        admin code (config znode and ``/config/changes`` notification)."""
        value = "true" if unclean else "false"
        self.log(f"admin sets unclean.leader.election.enable={value} on {topic}")
        try:
            alter_topic_config(self.admin, topic, {UNCLEAN_CONFIG: value})
        except AdminError as exc:  # e.g. the topic is gone: the tool refuses, nothing changes
            self.log(f"  refused: {exc}")

    def op_alter_broker_default(self: World, unclean: bool) -> None:
        """kafka-configs.sh --entity-type brokers --entity-default: the cluster's dynamic
        unclean.leader.election.enable, which overrides the controllers' own setting."""
        value = "true" if unclean else "false"
        self.log(f"admin sets the brokers' default {UNCLEAN_CONFIG}={value}")
        alter_broker_default_config(self.admin, {UNCLEAN_CONFIG: value})

    # -- malformed input ---------------------------------------------------------------------

    def op_malformed_topic(self: World) -> None:
        """An admin writes an unreadable topic znode (repaired later by ``op_repair_topics``)."""
        topic = f"m{next(self.topic_seq)}"
        self.log(f"admin writes an unreadable /brokers/topics/{topic}")
        self.admin.create(paths.topic_path(topic), b'{"version":3,"partitions":{"0":[1,1]}}')
        self.unreadable_topics.append(topic)

    def op_repair_topics(self: World) -> None:
        while self.unreadable_topics:
            topic = self.unreadable_topics.pop(0)
            if self.zk.read(paths.topic_path(topic)) is None:
                continue
            if self.zk.read(paths.delete_topic_path(topic)) is not None:
                continue  # being deleted: the admin tool would not touch it
            assignment = {0: self._replicas(min(2, len(self.brokers)))}
            self.log(f"admin repairs /brokers/topics/{topic}: {assignment}")
            self.observer.on_request(AssignmentRequest("create", topic, assignment))
            data = codecs.encode_topic_assignment(
                TopicAssignment(topic, self._new_topic_id(), {0: ReplicaAssignment(assignment[0])})
            )
            self.admin.set(paths.topic_path(topic), data)

    def op_malformed_registration(self: World, broker: int) -> None:
        """A running broker rewrites its registration with bad data (same session)."""
        b = self.brokers[broker]
        if not b.up or b.session is None:
            return
        self.log(f"b{broker} rewrites its registration unreadable")
        b.session.set(paths.broker_path(broker), b'{"version":5,"endpoints":"?"}')
        b.unreadable = True

    def repair_registrations(self: World) -> None:
        """Brokers with an unreadable registration write a good one again (same session)."""
        for broker, b in sorted(self.brokers.items()):
            if b.unreadable and b.session is not None:
                self.log(f"b{broker} repairs its registration")
                b.session.set(paths.broker_path(broker), registration(broker))
            b.unreadable = False

    def op_malformed_admin_request(self: World, preferred: bool) -> None:
        path = paths.PREFERRED_REPLICA_ELECTION if preferred else paths.REASSIGN_PARTITIONS
        if self.zk.read(path) is not None:
            return
        self.log(f"admin writes an unreadable {path}")
        self.admin.create(path, b"{not json", makepath=True)

    # -- brokers -----------------------------------------------------------------------------

    def op_alter_isr(
        self: World, broker: int, topic: str, partition: int, member: int, expand: bool
    ) -> None:
        tp = TopicPartition(topic, partition)
        if tp not in self.brokers[broker].led_partitions():
            # Ask one of the brokers that believe they lead it (a stale leader among them
            # gets FENCED_LEADER_EPOCH).
            leaders = [i for i, x in sorted(self.brokers.items()) if tp in x.led_partitions()]
            if not leaders:
                return
            broker = self.rng.choice(leaders)
        b = self.brokers[broker]
        if expand:
            hosted = b.state.hosted(tp) if b.state is not None else None
            # A follower joins only once it follows the leader's current epoch (caught up).
            if hosted is None or not self.brokers[member].follows(tp, hosted.leader_epoch):
                return
        request = b.alter_partition_request(tp, member, expand=expand)
        if request is None:
            return
        verb = "adds" if expand else "drops"
        self.log(f"b{broker} (leader of {tp}) {verb} {member} to/from the ISR via AlterPartition")
        event = AlterPartitionReceived(request=request)
        incarnation = b.incarnation

        def answered(fut: Any) -> None:
            if b.incarnation == incarnation and fut.exception() is None:
                b.apply_alter_partition_response(tp, fut.result())

        self._reply_later(event, answered)
        self._call_active(event)

    def op_allocate_producer_ids(self: World, broker: int) -> None:
        """A broker asks for a block of producer ids; the block it is answered is recorded."""
        b = self.brokers[broker]
        if not b.up:
            return
        self.log(f"b{broker} asks for a block of producer ids")
        event = AllocateProducerIds(broker_id=broker, broker_epoch=b.epoch)

        def answered(fut: Any) -> None:
            if fut.exception() is None:
                block = fut.result()
                self.log(f"  b{broker} got producer ids {block.block_start}-{block.block_end}")
                self.observer.on_producer_id_block(broker, block.block_start, block.block_end)

        self._reply_later(event, answered)
        self._call_active(event)

    def op_controlled_shutdown(self: World, broker: int) -> None:
        b = self.brokers[broker]
        if not b.up or b.shutting_down:
            return
        b.shutting_down = True
        self.log(f"b{broker} starts a controlled shutdown")
        self._shutdown_attempt(broker, b.incarnation, 1)

    def _shutdown_attempt(self: World, broker: int, incarnation: int, attempt: int) -> None:
        b = self.brokers[broker]
        if b.incarnation != incarnation or not b.up:
            return
        event = ControlledShutdown(broker_id=broker, broker_epoch=b.epoch)

        def answered(fut: Any) -> None:
            if b.incarnation != incarnation or not b.up:
                return
            done = fut.exception() is None and not fut.result()
            if done or attempt >= CONTROLLED_SHUTDOWN_ATTEMPTS:
                self.log(f"b{broker} stops after controlled shutdown (clean: {done})")
                b.stop()
            else:
                self.schedule(
                    0.2 + self.rng.random(),
                    lambda: self._shutdown_attempt(broker, incarnation, attempt + 1),
                )

        self._reply_later(event, answered)
        if self._call_active(event) is None:
            event.reply.set_exception(RuntimeError("no active controller"))

    # -- broker faults -----------------------------------------------------------------------

    def op_crash_broker(self: World, broker: int) -> None:
        """The process dies; its registration stays until the session times out."""
        b = self.brokers[broker]
        if not b.up:
            return
        self.log(f"b{broker} crashes")
        b.crash()
        session = b.session
        self.schedule(self.config.session_timeout_s, lambda: self._expire_if(broker, session))

    def _expire_if(self: World, broker: int, session: object) -> None:
        b = self.brokers[broker]
        if b.session is session and session is not None:
            self.log(f"b{broker}'s session times out")
            b.expire_session()

    def op_kill_broker(self: World, broker: int) -> None:
        """The process dies and its session ends at once (registration deleted)."""
        b = self.brokers[broker]
        if not b.up:
            return
        self.log(f"b{broker} is killed")
        b.crash()
        b.expire_session()

    def op_restart_broker(self: World, broker: int) -> None:
        b = self.brokers[broker]
        if b.up:
            return
        self.log(f"b{broker} starts")
        b.start()

    def op_pause_broker(self: World, broker: int, seconds: float = 1.0) -> None:
        """The broker stops answering for a while (a long GC pause): requests queue up."""
        b = self.brokers[broker]
        if not b.up:
            return
        self.log(f"b{broker} stalls for {seconds:.2f}s")
        b.paused_until = self.now + seconds

    def op_lose_answers(self: World, broker: int, count: int = 1) -> None:
        """The next answers ``broker`` sends the active controller are lost: each request is
        applied by the broker, then sent again."""
        sc = self.active_controller()
        link = sc.channel.links.get(broker) if sc is not None else None
        if link is None:
            return
        self.log(f"the next {count} answer(s) of b{broker} to c{sc.cid} will be lost")  # type: ignore[union-attr]
        link.lose_answers += count

    def op_expire_broker(self: World, broker: int) -> None:
        """The session of a running broker expires; it registers again with a new epoch."""
        b = self.brokers[broker]
        if not b.up:
            return
        self.log(f"b{broker}'s session expires; it registers again")
        b.expire_session()

    # -- controller faults -------------------------------------------------------------------

    def op_crash_controller(self: World, controller: int) -> None:
        sc = self.controllers[controller]
        if not sc.up or sc.busy:
            return
        self.log(f"c{controller} crashes")
        sc.up = False
        if sc.ctl is not None:
            sc.ctl.scheduler.shutdown()
        sc.channel.shutdown()
        session = sc.port.inner if sc.port is not None else None

        def expire() -> None:
            if session is not None and session._sid is not None:
                self.log(f"the session of c{controller}'s crashed process times out")
                self.zk.expire(session, reconnect=False)

        self.schedule(self.config.session_timeout_s, expire)

    def op_restart_controller(self: World, controller: int) -> None:
        if self.controllers[controller].up:
            return
        self.log(f"c{controller} starts")
        self.start_controller(controller)

    def op_expire_controller(self: World, controller: int) -> None:
        sc = self.controllers[controller]
        if not sc.up or sc.port is None:
            return
        self.log(f"c{controller}'s session expires")
        self.zk.expire(sc.port.inner, reconnect=True)

    def op_disconnect_controller(self: World, controller: int, seconds: float = 1.0) -> None:
        sc = self.controllers[controller]
        if not sc.up or sc.port is None:
            return
        session = sc.port.inner
        self.log(f"c{controller} loses its ZooKeeper connection for {seconds:.2f}s")
        self.zk.disconnect(session)
        self.schedule(seconds, lambda: self.zk.reconnect(session))

    def op_stall_controller(self: World, controller: int, seconds: float = 1.0) -> None:
        """The controller's event thread stops for a while (a long GC pause, a frozen VM);
        past the session timeout its session expires meanwhile."""
        sc = self.controllers[controller]
        if not sc.up or sc.port is None:
            return
        self.log(f"c{controller} stalls for {seconds:.2f}s")
        sc.stalled_until = self.now + seconds
        if seconds > self.config.session_timeout_s:
            session = sc.port.inner
            self.schedule(
                self.config.session_timeout_s,
                lambda: self.zk.expire(session, reconnect=True) if session._sid else None,
            )

    def op_zombie_controller(self: World, controller: int) -> None:
        sc = self.controllers[controller]
        if sc.up:
            self.log(f"c{controller} will lose its session just before its next write")
            sc.zombie = True


def random_op(world: World) -> tuple[str, dict[str, Any]]:
    """One operation name and its arguments, drawn from the world's generator."""
    rng = world.rng
    names = list(WEIGHTS)
    name = rng.choices(names, weights=[WEIGHTS[n] for n in names])[0]
    args: dict[str, Any]
    brokers = sorted(world.brokers)
    controllers = sorted(world.controllers)
    topics = world._topics()
    partitions = [
        TopicPartition(t, p)
        for t in topics
        for p in sorted((world._topic_assignment(t) or TopicAssignment(t, None, {})).partitions)
    ]
    if name in ("add_partitions", "delete_topic", "alter_topic_config") and not topics:
        name = "create_topic"
    if name in ("reassign", "cancel_reassignment", "elect", "alter_isr") and not partitions:
        name = "create_topic"
    if name == "create_topic":
        return name, {"partitions": rng.randint(1, 3), "replication": rng.randint(1, 3)}
    if name == "add_partitions":
        return name, {"topic": rng.choice(topics), "count": rng.randint(1, 2)}
    if name == "delete_topic":
        return name, {"topic": rng.choice(topics)}
    if name == "alter_topic_config":
        return name, {"topic": rng.choice(topics), "unclean": rng.random() < 0.5}
    if name == "alter_broker_default":
        return name, {"unclean": rng.random() < 0.5}
    if name in ("reassign", "cancel_reassignment"):
        tp = rng.choice(partitions)
        args = {"topic": tp.topic, "partition": tp.partition}
        if name == "reassign":
            args["target"] = tuple(rng.sample(brokers, rng.randint(1, min(3, len(brokers)))))
            args["via_zk"] = rng.random() < 0.5
        return name, args
    if name == "elect":
        chosen = rng.sample(partitions, rng.randint(1, min(3, len(partitions))))
        return name, {
            "partitions": sorted(chosen),
            "unclean": rng.random() < 0.3,
            "via_zk": rng.random() < 0.5,
        }
    if name == "alter_isr":
        tp = rng.choice(partitions)
        return name, {
            "broker": rng.choice(brokers),
            "topic": tp.topic,
            "partition": tp.partition,
            "member": rng.choice(brokers),
            "expand": rng.random() < 0.6,
        }
    if name in ("malformed_topic", "repair_topics"):
        return name, {}
    if name == "malformed_admin_request":
        return name, {"preferred": rng.random() < 0.5}
    if name == "malformed_registration":
        return name, {"broker": rng.choice(brokers)}
    if name == "lose_answers":
        return name, {"broker": rng.choice(brokers), "count": rng.randint(1, 3)}
    if name.endswith("_broker") or name in ("controlled_shutdown", "allocate_producer_ids"):
        args = {"broker": rng.choice(brokers)}
        if name == "pause_broker":
            args["seconds"] = rng.uniform(0.1, 3.0)
        return name, args
    args = {"controller": rng.choice(controllers)}
    if name == "disconnect_controller":
        args["seconds"] = rng.uniform(0.05, world.config.session_timeout_s * 0.8)
    elif name == "stall_controller":
        args["seconds"] = rng.uniform(0.1, world.config.session_timeout_s * 1.5)
    return name, args


def apply_op(world: World, name: str, args: dict[str, Any]) -> None:
    getattr(world, f"op_{name}")(**args)


__all__ = ["WEIGHTS", "Operations", "apply_op", "random_op"]
