"""Config changes (``/config/changes``) that matter to the controller:
``unclean.leader.election.enable`` turning true for a topic, or for the cluster through the
dynamic broker default (``/config/brokers/<default>``).

In Kafka the *brokers* watch ``/config/changes`` (``ZkNodeChangeNotificationListener``), apply
topic configs, and call ``KafkaController.enableTopicUncleanLeaderElection(topic)`` when the
topic's config says ``unclean.leader.election.enable=true``. This controller has no broker
inside it, so it watches the notifications itself, the way Kafka's listener does:

* admin tools (``kafka-configs.sh``, ``zk-controller configs alter``) write the config to
  ``/config/topics/T`` and then a sequential ``/config/changes/config_change_NNNNNNNNNN`` with
  ``{"version":2,"entity_path":"topics/T"}`` (or the older
  ``{"version":1,"entity_type":"topics","entity_name":"T"}``);
* on a child change, the notifications with a sequence number above the last one seen are read
  in order; each named topic's config is re-read, and when its *effective* setting (the topic
  override, else the controller's ``unclean.leader.election.enable``) is true,
  ``TopicUncleanLeaderElectionEnable(topic)`` is queued, once per read (as Kafka calls
  ``enableTopicUncleanLeaderElection`` on every such notification: remembering "already on"
  went stale when the topic was deleted and re-created, or the default turned off);
* a notification for ``brokers/<default>`` (``kafka-configs.sh --entity-type brokers
  --entity-default``, ``zk-controller configs alter --entity-type brokers --entity-default``)
  re-reads ``/config/brokers/<default>``: its ``unclean.leader.election.enable``, when set,
  overrides the controller's own setting, as a dynamic broker config overrides
  ``server.properties`` in Kafka; turning the effective value true queues
  ``UncleanLeaderElectionEnable`` (Kafka's ``enableDefaultUncleanLeaderElection``). The znode
  is also read at failover, before the state machines elect (``load_dynamic_broker_defaults``);
  per-broker entities (``/config/brokers/N``) configure brokers and are ignored here;
* notifications seen more than 15 minutes ago are deleted, like Kafka's listener does
  (``changeExpirationMs``), so the path does not grow forever without Kafka brokers around.

At failover every notification present is read (the listener starts with no "last seen"),
so a change made while no controller was active is not missed; re-triggering elections for a
topic is harmless (only partitions that still have no leader are retried).

A malformed notification or config is logged with its path and problem and skipped; it never
stops the processing of the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import structlog

from controller.core.controller_state import ControllerState
from controller.core.election import UNCLEAN_CONFIG, unclean_enabled
from controller.core.events import (
    ControllerEvent,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from controller.zk import paths
from controller.zk.errors import MalformedZnodeError, ZkError
from controller.zk.watches import ZNodeChildChangeHandler

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.config_changes")

#: Kafka's ``ZkNodeChangeNotificationListener.changeExpirationMs`` (15 minutes).
CHANGE_EXPIRATION_S = 15 * 60.0
TOPICS_ENTITY = paths.CONFIG_TYPE_TOPICS
BROKERS_ENTITY = paths.CONFIG_TYPE_BROKERS


@dataclass(eq=False)
class ConfigChangeNotification(ControllerEvent):
    """The children of ``/config/changes`` changed (a config was altered)."""

    # Kafka reads these on its brokers' config listener thread, so no controller timer counts
    # them; Idle keeps Kafka's timers meaning what they mean. The event this may queue,
    # TopicUncleanLeaderElectionEnable, is timed as in Kafka.
    state: ClassVar[ControllerState] = ControllerState.Idle


def sequence_number(name: str) -> int | None:
    """The sequence number of ``config_change_0000000042``; None for any other child."""
    if not name.startswith(paths.CONFIG_CHANGE_PREFIX):
        return None
    digits = name[len(paths.CONFIG_CHANGE_PREFIX) :]
    # ZooKeeper writes 10 digits; the cap keeps int() away from Python's 4300-digit limit.
    ok = digits.isascii() and digits.isdigit() and len(digits) <= 19
    return int(digits) if ok else None


def load_dynamic_broker_defaults(ctl: Controller) -> bool:
    """Read ``/config/brokers/<default>`` into ``ctl.dynamic_unclean_default``; return whether
    the effective cluster default turned from false to true.

    An unreadable znode or value keeps what was known (logged): a malformed config never
    enables unclean elections, and never disables them behind an operator's back either.
    """
    before = ctl.unclean_leader_election_default
    path = paths.BROKER_DEFAULT_CONFIG
    try:
        config = ctl.gateway.get_broker_default_config()
    except (MalformedZnodeError, ZkError) as exc:
        problem = exc.problem if isinstance(exc, MalformedZnodeError) else str(exc)
        log.warning("cannot read the dynamic broker defaults", path=path, error=problem)
        return False
    value = config.get(UNCLEAN_CONFIG)
    if value is None:
        ctl.dynamic_unclean_default = None
    elif value.strip().lower() in ("true", "false"):
        ctl.dynamic_unclean_default = value.strip().lower() == "true"
    else:
        log.warning(
            "ignoring an invalid dynamic broker default",
            path=path,
            config=UNCLEAN_CONFIG,
            value=value,
            expected="true or false",
        )
        return False
    after = ctl.unclean_leader_election_default
    if after != before:
        log.info(
            "cluster default for unclean leader election changed",
            enabled=after,
            source="dynamic broker default" if value is not None else "controller config",
        )
    return after and not before


class ConfigChanges:
    def __init__(self, ctl: Controller, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ctl = ctl
        self._clock = clock
        self._last_seen = -1
        # Notification name -> when this controller first saw it (for the purge).
        self._first_seen: dict[str, float] = {}
        self._changes_czxid: int | None = None  # of /config/changes as last read
        ctl.election.add_failover_hook(self.start)

    def handlers(self) -> dict[type, Any]:
        return {ConfigChangeNotification: lambda e: self.process_config_changes()}

    def start(self) -> None:
        """Failover: watch ``/config/changes`` and read every notification present."""
        self._last_seen = -1
        self._first_seen.clear()
        self._changes_czxid = None
        self.ctl.gateway.register_child_handler(
            ZNodeChildChangeHandler(
                paths.CONFIG_CHANGES, lambda: self.ctl.put(ConfigChangeNotification())
            )
        )
        self.process_config_changes()

    def process_config_changes(self) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            # Left over from a previous term: drop the handler, so nothing re-arms the watch.
            ctl.gateway.unregister_child_handler(paths.CONFIG_CHANGES)
            return
        czxid = ctl.gateway.get_config_changes_czxid()
        if czxid != self._changes_czxid:
            # Recreated (an operator's deleteall): its numbers start again at 0, and would
            # all be taken for notifications already processed.
            self._changes_czxid = czxid
            self._last_seen = -1
            self._first_seen.clear()
        children = ctl.gateway.get_children(paths.CONFIG_CHANGES)  # re-arms the watch
        numbered = sorted(
            (seq, name) for name in children if (seq := sequence_number(name)) is not None
        )
        fresh = [(seq, name) for seq, name in numbered if seq > self._last_seen]
        topics: list[str] = []
        broker_default = False
        if fresh:
            for path, change in ctl.gateway.get_config_change_notifications(
                name for _, name in fresh
            ):
                if isinstance(change, MalformedZnodeError):
                    log.warning(
                        "ignoring malformed config change notification",
                        path=change.path,
                        problem=change.problem,
                    )
                    continue
                if isinstance(change, Exception):
                    log.warning(
                        "cannot read config change notification", path=path, error=str(change)
                    )
                    continue
                entity_type, name = change
                if entity_type == TOPICS_ENTITY and name not in topics:
                    topics.append(name)
                elif (entity_type, name) == (BROKERS_ENTITY, paths.CONFIG_DEFAULT_ENTITY):
                    broker_default = True
            self._last_seen = fresh[-1][0]
        if broker_default and load_dynamic_broker_defaults(ctl):
            ctl.put(UncleanLeaderElectionEnable())
        # Only topics the controller knows: their names came from ZooKeeper itself. A name
        # from a notification alone is anyone's text (600 KB long, say), and reading
        # /config/topics/<it> could wedge the session; an unknown topic has nothing to elect.
        known = [t for t in topics if t in ctl.context.all_topics]
        if known:
            self._check_unclean(known)
        self._purge_obsolete(numbered)

    def _check_unclean(self, topics: list[str]) -> None:
        ctl = self.ctl
        default = ctl.unclean_leader_election_default
        for topic, config in ctl.gateway.get_topic_configs(topics).items():
            if isinstance(config, Exception):
                problem = config.problem if isinstance(config, MalformedZnodeError) else config
                log.warning(
                    "cannot read topic config after a change notification",
                    topic=topic,
                    path=paths.topic_config_path(topic),
                    error=str(problem),
                )
                continue
            if unclean_enabled(config, default):
                log.info(
                    "unclean leader election is enabled for a topic",
                    topic=topic,
                    source="topic config" if UNCLEAN_CONFIG in config else "controller default",
                )
                ctl.put(TopicUncleanLeaderElectionEnable(topic=topic))

    def _purge_obsolete(self, numbered: list[tuple[int, str]]) -> None:
        """Delete notifications first seen more than Kafka's 15 minutes ago (unfenced, as
        Kafka's brokers do).

        Kafka's listener compares the znode's ctime; the port's stat has no ctime, so the time
        this controller first saw the notification stands in for it. A notification therefore
        lives at least 15 minutes, as in Kafka, for any other reader of the path.
        """
        now = self._clock()
        present = {name for _, name in numbered}
        for name in list(self._first_seen):
            if name not in present:
                del self._first_seen[name]  # deleted by someone else
        for _, name in numbered:
            self._first_seen.setdefault(name, now)
        gateway = self.ctl.gateway
        for _, name in numbered:
            if now - self._first_seen[name] <= CHANGE_EXPIRATION_S:
                break  # sequential: every later notification is newer
            try:
                gateway.purge_config_change_notification(name)
            except ZkError as exc:
                log.warning(
                    "cannot purge an old config change notification",
                    path=f"{paths.CONFIG_CHANGES}/{name}",
                    error=str(exc),
                )
                continue
            del self._first_seen[name]
