"""The simulated cluster and its seeded scheduler.

A ``World`` is one ZooKeeper model (``ObservedZooKeeper``), the real controller core
(``Controller``: context, state machines, handlers, event manager) for each controller id,
simulated brokers, and one ``random.Random(seed)`` that makes every scheduling decision. No
thread runs and no real clock is read: time is ``World.now`` (virtual seconds), advanced by
each step, and timers (the controllers' schedulers, session timeouts, reconnects) fire when
it passes them. A run is therefore a pure function of the seed and the operations applied.

One *step* advances time a little, fires due timers, then performs ONE action picked at random
among everything that could happen next:

* deliver the next ZooKeeper notification (watches and session states, in ZooKeeper's order);
* let one controller process the next event of its queue;
* send a controller's next queued request to a broker (one in flight per broker, as Kafka's
  sender thread), or hand a broker's answer back to the controller (its callback enqueues the
  response event);
* run a broker's continuation (applying an AlterPartition answer, retrying a controlled
  shutdown).

While a controller processes an event, each of its ZooKeeper calls may let the others run a
few steps first (``SimConfig.interleave_p``), an admin tool may write first
(``SimConfig.admin_mid_event_p``, ``controller.sim.admin_ops``), and a "zombie" fault expires
its session at its next write and lets another controller take over before the write is
attempted: the races a real controller meets between its reads and its fenced, conditional
writes.

Operations and faults (``controller.sim.ops``) are applied between steps. ``heal`` ends the
faults, lets the queues drain and timers run for session timeout + 5 s of virtual time, and
``final_violations`` then checks liveness and the quiet-cluster checks on top of the safety
invariants observed all along (``controller.sim.observe``).
"""

from __future__ import annotations

import hashlib
import heapq
import io
import itertools
import random
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from controller.config import ControllerConfig, load_config
from controller.core.controller import Controller
from controller.core.election import UNCLEAN_CONFIG
from controller.core.events import ShutdownEventThread
from controller.core.model import TopicPartition
from controller.invariants import PartitionView, Violation, leaderless_partitions
from controller.sim.admin_ops import AdminOperations, admin_rng
from controller.sim.brokers import SimBroker
from controller.sim.channel import SimChannel, SimTimers
from controller.sim.observe import Observer
from controller.sim.ops import Operations
from controller.sim.zk import (
    ControllerPort,
    ObservedZooKeeper,
    delivery_session,
    is_session_state,
)
from controller.state_change_log import StateChangeLog
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError

Action = Callable[[], None]


@dataclass(frozen=True)
class SimConfig:
    brokers: tuple[int, ...] = (1, 2, 3)
    controllers: tuple[int, ...] = (100, 101)
    session_timeout_s: float = 6.0
    max_step_s: float = 0.05  # each step advances virtual time by up to this much
    interleave_p: float = 0.03  # per controller ZooKeeper call: let others run first
    settle_slack_s: float = 5.0  # liveness: recovered within session timeout + this
    max_quiet_steps: int = 20_000  # a run that never quiets down is a failure (livelock)
    trace_limit: int = 400  # trace lines kept for a failure report
    flags: Mapping[str, str] = field(default_factory=dict)  # controller config settings
    admin_mid_event_p: float = 0.05  # per controller ZooKeeper call: an admin acts first


class SimController:
    """One controller id across its processes (a restart builds a new ``Controller``)."""

    def __init__(self, cid: int) -> None:
        self.cid = cid
        self.ctl: Controller | None = None
        self.port: ControllerPort | None = None
        self.channel = SimChannel(cid)
        self.up = False
        self.busy = False  # in the middle of an event (its ZooKeeper call let others run)
        self.stalled_until = 0.0
        self.zombie = False

    def can_process(self, now: float) -> bool:
        return (
            self.up
            and not self.busy
            and now >= self.stalled_until
            and self.ctl is not None
            and self.ctl.events.queue_size() > 0
        )


class Timer:
    __slots__ = ("action", "alive", "due", "seq")

    def __init__(self, due: float, seq: int, action: Action) -> None:
        self.due, self.seq, self.action, self.alive = due, seq, action, True

    def __lt__(self, other: Timer) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)


class World(Operations, AdminOperations):
    def __init__(self, seed: int, config: SimConfig | None = None) -> None:
        self.seed = seed
        self.config = config or SimConfig()
        self.rng: random.Random = random.Random(seed)
        self._admin_rng: random.Random = admin_rng(seed)  # mid-event admin ops (``admin_ops``)
        self.admin_mid_event_on: bool = True  # until ``heal``: admins stop acting, too
        self.now = 0.0
        self.steps = 0
        self.trace: deque[str] = deque(maxlen=self.config.trace_limit)
        self._digest = hashlib.sha256()
        unclean = self.config.flags.get(UNCLEAN_CONFIG, "")
        self.observer = Observer(self.log, unclean_default=unclean.strip().lower() == "true")
        self._outbox: dict[int, deque[Action]] = {}
        self._session_keys = itertools.count(1)
        self.zk = ObservedZooKeeper(dispatcher=self._dispatch, on_commit=self.observer.on_commit)
        self.admin = self.zk.open_session()
        self._timers: list[Timer] = []
        self._timer_seq = itertools.count()
        self.replies: deque[Action] = deque()
        self.event_errors: list[str] = []  # events whose handler failed (``sim-no-event-error``)
        self._nesting = 0
        self._configs: dict[int, ControllerConfig] = {}
        self.brokers = {b: SimBroker(b, self.zk) for b in self.config.brokers}
        self.controllers = {c: SimController(c) for c in self.config.controllers}
        self.topic_seq = itertools.count()
        self.unreadable_topics: list[str] = []  # written malformed, not repaired yet
        self.state_change_logs: list[io.StringIO] = []  # one per controller process

    def _dispatch(self, delivery: Action) -> None:
        if is_session_state(delivery):
            delivery()
            return
        # One FIFO per session (ZooKeeper's order guarantee is per session), in the order
        # the sessions first got one, so the choice among them is deterministic.
        session = delivery_session(delivery)
        key = 0
        if session is not None:
            key = getattr(session, "_sim_key", 0)
            if not key:
                key = next(self._session_keys)
                session._sim_key = key  # type: ignore[attr-defined]
        queue = self._outbox.get(key)
        if queue is None:
            queue = self._outbox[key] = deque()
        queue.append(delivery)

    # -- trace -------------------------------------------------------------------------------

    def log(self, text: str) -> None:
        line = f"{self.now:9.3f}s #{self.steps:<6} {text}"
        self.trace.append(line)
        self._digest.update(line.encode())

    @property
    def fingerprint(self) -> str:
        """A digest of the whole trace: equal for two runs that did exactly the same."""
        return self._digest.hexdigest()[:16]

    # -- timers ------------------------------------------------------------------------------

    def schedule(self, delay_s: float, action: Action) -> Timer:
        timer = Timer(self.now + max(delay_s, 0.0), next(self._timer_seq), action)
        heapq.heappush(self._timers, timer)
        return timer

    @staticmethod
    def cancel(timer: object) -> None:
        assert isinstance(timer, Timer)
        timer.alive = False

    def _advance(self, dt: float) -> None:
        self.now += dt
        while self._timers and self._timers[0].due <= self.now:
            timer = heapq.heappop(self._timers)
            if timer.alive:
                timer.alive = False
                timer.action()

    def next_timer(self) -> float | None:
        while self._timers and not self._timers[0].alive:
            heapq.heappop(self._timers)
        return self._timers[0].due if self._timers else None

    # -- controllers -------------------------------------------------------------------------

    def _controller_config(self, cid: int) -> ControllerConfig:
        config = self._configs.get(cid)
        if config is None:
            flags = {
                "controller.id": str(cid),
                "zookeeper.connect": "sim:2181",
                "zookeeper.session.timeout.ms": str(int(self.config.session_timeout_s * 1000)),
                **self.config.flags,
            }
            config = self._configs[cid] = load_config(flags=flags, env={})
        return config

    def start_controller(self, cid: int) -> None:
        """A controller process starts: new session, new ``Controller``, ``Startup`` queued."""
        sc = self.controllers[cid]
        # A previous process's session may still be alive (it times out on its own timer):
        # the new process then finds /controller naming its own id, held by that session.
        session = self.zk.open_session()
        port = ControllerPort(
            session,
            self.zk,
            before_call=partial(self._before_call, sc),
            on_fenced_write=partial(self.observer.on_fenced_write, cid),
            on_unfenced_write=partial(self.observer.on_unfenced_write, cid),
        )
        sc.channel = SimChannel(cid)
        scl = io.StringIO()
        self.state_change_logs.append(scl)
        ctl = Controller(
            self._controller_config(cid),
            port,
            sc.channel,  # type: ignore[arg-type]
            state_change_log=StateChangeLog(scl, cid, clock_ns=lambda: int(self.now * 1e9)),
        )
        ctl.scheduler = SimTimers(self.schedule, self.cancel)  # type: ignore[assignment]
        record = ctl.record_unclean_election

        def record_unclean(tp: TopicPartition) -> None:
            record(tp)
            lai = ctl.context.partition_leader_and_isr(tp)
            self.observer.on_unclean_election(
                tp.topic, tp.partition, lai.leader_epoch if lai else -1
            )

        ctl.record_unclean_election = record_unclean  # type: ignore[method-assign]
        sc.ctl, sc.port, sc.up, sc.stalled_until, sc.zombie = ctl, port, True, 0.0, False
        ctl.startup(start_event_thread=False)

    def active_controller(self) -> SimController | None:
        """The controller named by ``/controller`` if it runs and believes it is active (what a
        client finds: anything else answers NOT_CONTROLLER)."""
        data = self.zk.read(paths.CONTROLLER)
        if data is None:
            return None
        try:
            cid = codecs.decode_controller(data, paths.CONTROLLER)
        except MalformedZnodeError:
            return None
        sc = self.controllers.get(cid)
        if sc is None or not sc.up or sc.ctl is None or not sc.ctl.is_active:
            return None
        return sc

    def _before_call(self, sc: SimController, method: str) -> None:
        if self._nesting:
            return
        self.maybe_admin_mid_event(sc, method)
        if sc.zombie and method == "multi":
            sc.zombie = False
            self.log(f"c{sc.cid} zombie: its session expires before its write; others run")
            assert sc.port is not None
            self.zk.expire(sc.port.inner, reconnect=True)
            self._run_nested(sc, self.config.max_quiet_steps)
        elif self.config.interleave_p and self.rng.random() < self.config.interleave_p:
            self._run_nested(sc, self.rng.randint(1, 12))

    def _run_nested(self, paused: SimController, max_steps: int) -> None:
        self._nesting += 1
        self.log(f"c{paused.cid} paused in the middle of an event")
        try:
            for _ in range(max_steps):
                if not self.step(exclude=paused):
                    break
        finally:
            self._nesting -= 1
            self.log(f"c{paused.cid} resumes")

    # -- the scheduler -----------------------------------------------------------------------

    def _actions(self, exclude: SimController | None) -> list[tuple[str, Action]]:
        acts: list[tuple[str, Action]] = []
        for queue in self._outbox.values():
            if queue:
                acts.append(("zk", partial(_deliver_next, queue)))
        reachable = self._reachable
        for sc in self.controllers.values():
            if sc is not exclude and sc.can_process(self.now):
                acts.append(("event", partial(self._process, sc)))
            if not sc.up:
                continue
            for b in sc.channel.deliverable(reachable):
                acts.append(("send", partial(self._send, sc, b)))
            for b in sc.channel.answerable():
                acts.append(("answer", partial(self._answer, sc, b)))
        if self.replies:
            acts.append(("reply", self._run_reply))
        return acts

    def _reachable(self, broker_id: int) -> bool:
        broker = self.brokers.get(broker_id)
        return broker is not None and broker.up and self.now >= broker.paused_until

    def step(self, exclude: SimController | None = None) -> bool:
        """One step; False when nothing could happen (time still advanced)."""
        self._advance(self.rng.random() * self.config.max_step_s)
        acts = self._actions(exclude)
        if not acts:
            return False
        self.steps += 1
        _, action = acts[self.rng.randrange(len(acts))]
        action()
        return True

    def _run_reply(self) -> None:
        self.replies.popleft()()

    def _process(self, sc: SimController) -> None:
        assert sc.ctl is not None
        queued = sc.ctl.events.poll()
        if queued is None or isinstance(queued.event, ShutdownEventThread):
            return
        self.log(f"c{sc.cid} processes {queued.event.name}")
        sc.busy = True
        errors = sc.ctl.event_errors
        try:
            queued.process(sc.ctl)
        finally:
            sc.busy = False
        if sc.ctl is not None and sc.ctl.event_errors > errors:
            # The controller survives a failing handler (logged, swallowed), but the event's
            # work is unfinished: in the simulation it is always a defect.
            self.event_errors.append(f"c{sc.cid}: {queued.event.name} at step {self.steps}")

    def _send(self, sc: SimController, broker_id: int) -> None:
        link = sc.channel.links[broker_id]
        request, callback = link.queue.popleft()
        handled = self.brokers[broker_id].handle(request)
        obs = handled.observation
        self.log(
            f"c{sc.cid} -> b{broker_id} {obs.kind} (controller epoch {obs.controller_epoch}): "
            f"{'accepted' if obs.accepted else 'rejected'}"
        )
        self.observer.on_broker_request(obs)
        link.in_flight = (request, callback, handled.response)

    def _answer(self, sc: SimController, broker_id: int) -> None:
        link = sc.channel.links[broker_id]
        assert link.in_flight is not None
        request, callback, response = link.in_flight
        link.in_flight = None
        if link.lose_answers:
            link.lose_answers -= 1
            self.log(f"c{sc.cid} <- b{broker_id} answer lost; the request goes again")
            link.queue.appendleft((request, callback))
            return
        if callback is not None:
            callback(response)

    # -- running -----------------------------------------------------------------------------

    def run(self, steps: int) -> None:
        for _ in range(steps):
            if self.observer.found_any():
                return
            self.step()

    def quiesce(self) -> bool:
        """Step until nothing can happen; False if that never came (a livelock)."""
        return any(not self.step() for _ in range(self.config.max_quiet_steps))

    def heal(self) -> list[Violation]:
        """Faults stop: crashed controllers restart, stalls and disconnections end. Then the
        queues drain and timers fire until session timeout + slack of virtual time has passed.
        Returns violations of quiescence (a run that never settles)."""
        self.log("faults stop")
        self.admin_mid_event_on = False  # else each admin operation may cause more: no quiet
        self.op_repair_topics()
        self.repair_registrations()
        for sc in self.controllers.values():
            sc.stalled_until, sc.zombie = 0.0, False
            if not sc.up:
                self.start_controller(sc.cid)
            elif sc.port is not None and sc.port.inner._sid is not None:
                self.zk.reconnect(sc.port.inner)
        end = self.now + self.config.session_timeout_s + self.config.settle_slack_s
        while True:
            if not self.quiesce():
                return [
                    Violation(
                        "sim-quiescence", f"still busy after {self.config.max_quiet_steps} steps"
                    )
                ]
            due = self.next_timer()
            if due is None or due > end:
                break
            self._advance(due - self.now)
        self._advance(max(end - self.now, 0.0))
        if not self.quiesce():
            return [Violation("sim-quiescence", "still busy after the last timers")]
        return []

    # -- end-of-run checks -------------------------------------------------------------------

    def live_brokers(self) -> set[int]:
        """Running, registered, and with a readable registration (else nobody can reach it)."""
        return {
            b
            for b, broker in self.brokers.items()
            if broker.up and broker.registered and not broker.unreadable
        }

    def partition_states(self) -> dict[TopicPartition, tuple[int, int, tuple[int, ...], int]]:
        """(leader, leader epoch, ISR, zkVersion) of every partition state znode."""
        out = {}
        for path, (data, stat) in self.zk.snapshot().items():
            if not path.endswith("/state") or not path.startswith(paths.BROKERS_TOPICS + "/"):
                continue
            parts = path.split("/")  # ['', 'brokers', 'topics', T, 'partitions', P, 'state']
            tp = TopicPartition(parts[3], int(parts[5]))
            try:
                info = codecs.decode_partition_state(data, stat.version, path)
            except MalformedZnodeError:
                continue
            lai = info.leader_and_isr
            out[tp] = (lai.leader, lai.leader_epoch, tuple(lai.isr), stat.version)
        return out

    def final_violations(self) -> list[Violation]:
        from controller.sim.checks import (
            NO_EVENT_ERROR,
            assignments,
            quiet_cluster_violations,
            watch_violations,
        )
        from controller.sim.scl_check import scl_violations

        found = self.observer.violations()
        found += [Violation(NO_EVENT_ERROR, f"handler failed: {e}") for e in self.event_errors]
        states = self.partition_states()
        deleting = set(self.zk.children(paths.DELETE_TOPICS))
        live = self.live_brokers()
        replicas = assignments(self, deleting)
        views = {
            (tp.topic, tp.partition): PartitionView(s[0], s[2], replicas.get(tp))
            for tp, s in states.items()
        }
        found += leaderless_partitions(views, live, deleting)
        found += quiet_cluster_violations(self, states, deleting, live, replicas)
        found += watch_violations(self)
        found += scl_violations(self, states, deleting)
        return found


__all__ = ["SimConfig", "SimController", "World"]


def _deliver_next(queue: deque[Action]) -> None:
    queue.popleft()()
