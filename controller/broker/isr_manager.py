"""``AlterPartitionManager``: a leader's ISR changes on their way to the controller.

Kafka's ``DefaultAlterPartitionManager`` (3.6), for the reference broker:

* ``submit`` queues one proposed change per partition (a second one for the same partition is
  refused: the caller has one in flight and must wait for its answer);
* one request is in flight at a time, carrying every queued change; it is built at send time,
  with the broker's *current* epoch (a re-registration changes it);
* transport failures, no reachable controller, and top-level errors (NOT_CONTROLLER,
  STALE_BROKER_EPOCH, UNKNOWN_SERVER_ERROR) keep the changes queued and resend them after a
  short backoff. ``ControllerClient`` follows NOT_CONTROLLER to the active controller itself;
* each partition's answer goes to its item's callback. A callback returning True asks for the
  change to be sent again (Kafka's partition-level "retry" errors); a partition missing from
  the answer stays queued and is resent, as in Kafka.

The manager knows nothing about ISRs: ``controller.broker.replication`` decides what to
propose and what an answer means.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
import structlog

from controller.admin.controller_client import (
    ControllerAccessDeniedError,
    ControllerTlsHandshakeError,
    ControllerTlsMismatchError,
    NoActiveControllerError,
)
from controller.api.errors import Errors, error_name
from controller.api.v1 import controller_pb2
from controller.core.model import LeaderAndIsr, LeaderRecoveryState, TopicPartition

log = structlog.get_logger("controller.broker.isr")

# Kafka schedules a resend 50 ms after a failed AlterPartition; a little more here, because a
# failed attempt through ControllerClient has already waited for its own deadline.
DEFAULT_RETRY_BACKOFF_S = 0.1
# After the controller's authorization refused us, or its registration says our TLS settings
# cannot work: retrying at once cannot help.
ACCESS_DENIED_BACKOFF_S = 5.0

# The answer for one partition: an error, or the partition's state after the change.
Result = Errors | LeaderAndIsr
# Called on the manager's thread with the answer; returns True to have the item sent again.
Callback = Callable[[Result], bool]
# Sends one request to the active controller and returns its answer (raises on failure).
Sender = Callable[[controller_pb2.AlterPartitionRequest], controller_pb2.AlterPartitionResponse]


@dataclass(eq=False)
class AlterPartitionItem:
    """One partition's proposed state, as the leader holds it."""

    tp: TopicPartition
    topic_id: str  # "" when the leader does not know it: the topic is then named
    leader_epoch: int
    isr: tuple[tuple[int, int], ...]  # (broker id, broker epoch), -1 when unknown
    leader_recovery_state: LeaderRecoveryState
    partition_epoch: int
    callback: Callback = field(repr=False)


def build_request(
    broker_id: int, broker_epoch: int, items: list[AlterPartitionItem]
) -> controller_pb2.AlterPartitionRequest:
    """One AlterPartition request, topics grouped in first-seen order."""
    request = controller_pb2.AlterPartitionRequest(broker_id=broker_id, broker_epoch=broker_epoch)
    topics: dict[tuple[str, str], controller_pb2.AlterPartitionTopicData] = {}
    for item in items:
        key = (item.topic_id, "" if item.topic_id else item.tp.topic)
        topic = topics.get(key)
        if topic is None:
            topic = request.topics.add(topic_id=key[0], topic_name=key[1])
            topics[key] = topic
        topic.partitions.add(
            partition_index=item.tp.partition,
            leader_epoch=item.leader_epoch,
            new_isr_with_epochs=[
                controller_pb2.BrokerState(broker_id=b, broker_epoch=e) for b, e in item.isr
            ],
            leader_recovery_state=int(item.leader_recovery_state),
            partition_epoch=item.partition_epoch,
        )
    return request


def parse_response(
    response: controller_pb2.AlterPartitionResponse,
) -> dict[tuple[str, str, int], Result]:
    """Partition answers keyed like ``_key``: (topic id, topic name or "", partition)."""
    out: dict[tuple[str, str, int], Result] = {}
    for topic in response.topics:
        for p in topic.partitions:
            result: Result
            if p.error_code != Errors.NONE:
                result = Errors.for_code(p.error_code)
            else:
                try:
                    recovery = LeaderRecoveryState(p.leader_recovery_state)
                except ValueError:
                    result = Errors.UNKNOWN_SERVER_ERROR
                else:
                    result = LeaderAndIsr(
                        p.leader_id, p.leader_epoch, tuple(p.isr), recovery, p.partition_epoch
                    )
            # A topic sent by id is answered by id; one sent by name, by name.
            if topic.topic_id:
                out[(topic.topic_id, "", p.partition_index)] = result
            if topic.topic_name:
                out[("", topic.topic_name, p.partition_index)] = result
    return out


def _key(item: AlterPartitionItem) -> tuple[str, str, int]:
    if item.topic_id:
        return (item.topic_id, "", item.tp.partition)
    return ("", item.tp.topic, item.tp.partition)


class AlterPartitionManager:
    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        send: Sender,
        *,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        access_denied_backoff_s: float = ACCESS_DENIED_BACKOFF_S,
    ) -> None:
        self.broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._send = send
        self._retry_backoff_s = retry_backoff_s
        self._access_denied_backoff_s = access_denied_backoff_s
        self._cond = threading.Condition()
        self._unsent: dict[TopicPartition, AlterPartitionItem] = {}
        self._stopping = False
        self._thread: threading.Thread | None = None
        # Bumped by every start and stop: a sender thread or resend timer of an earlier start
        # (not joined beyond stop's timeout) ends instead of sending beside the new one.
        self._generation = 0
        # Diagnostics: requests sent, and partition answers by error name.
        self.requests_sent = 0
        self.answers: dict[str, int] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        with self._cond:
            if self._thread is not None:
                return
            self._stopping = False
            self._generation += 1
            self._thread = threading.Thread(
                target=self._run,
                args=(self._generation,),
                name=f"broker-{self.broker_id}-alter-partition",
                daemon=True,
            )
            self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """Drop queued changes and stop. A request in flight is not waited for beyond
        ``timeout`` (the thread is a daemon; its late answers only reach callbacks that check
        the partition table first)."""
        with self._cond:
            self._stopping = True
            self._generation += 1
            self._unsent.clear()
            self._cond.notify_all()
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # -- submitting ------------------------------------------------------------------------

    def submit(self, item: AlterPartitionItem, generation: int | None = None) -> bool:
        """Queue a change; False if one for the same partition is already queued (or
        ``generation``, a resend's, is from before a stop)."""
        with self._cond:
            stale = generation is not None and generation != self._generation
            if self._stopping or stale or item.tp in self._unsent:
                return False
            self._unsent[item.tp] = item
            self._cond.notify_all()
            return True

    def pending(self) -> set[TopicPartition]:
        with self._cond:
            return set(self._unsent)

    # -- the sender thread -----------------------------------------------------------------

    def _run(self, generation: int) -> None:
        def stopped() -> bool:
            return self._stopping or self._generation != generation

        while True:
            with self._cond:
                while not self._unsent and not stopped():
                    self._cond.wait()
                if stopped():
                    return
                items = list(self._unsent.values())
            backoff = self._send_once(items, generation)
            if backoff:
                with self._cond:
                    self._cond.wait_for(stopped, backoff)

    def _send_once(self, items: list[AlterPartitionItem], generation: int) -> float:
        """Send the items in one request; returns how long to wait before the next one: the
        retry backoff when any item is still unanswered (so a controller that keeps leaving a
        partition out is not asked again in a busy loop), 0 when all were answered."""
        request = build_request(self.broker_id, self._broker_epoch(), items)
        self.requests_sent += 1
        try:
            response = self._send(request)
        except (
            ControllerAccessDeniedError,
            ControllerTlsMismatchError,
            ControllerTlsHandshakeError,
        ) as exc:
            # Our certificate is refused, or our TLS settings or certificates cannot work with
            # the controller's listener (said at once, not after a deadline): only an operator
            # (or a certificate rotation) fixes that. Keep trying, slowly and loudly.
            denied = isinstance(exc, ControllerAccessDeniedError)
            log.error(
                "AlterPartition refused by the controller's authorization; will retry"
                if denied
                else "AlterPartition cannot reach the controller with this broker's TLS "
                "settings; will retry",
                broker_id=self.broker_id,
                error=str(exc),
                retry_in_s=self._access_denied_backoff_s,
            )
            return self._access_denied_backoff_s
        except (NoActiveControllerError, grpc.RpcError, OSError) as exc:
            log.info(
                "AlterPartition not delivered; will resend",
                broker_id=self.broker_id,
                partitions=[str(i.tp) for i in items],
                error=str(exc),
            )
            return self._retry_backoff_s
        except Exception:
            log.exception("AlterPartition failed; will resend", broker_id=self.broker_id)
            return self._retry_backoff_s
        if response.error_code != Errors.NONE:
            # STALE_BROKER_EPOCH resolves itself once the controller caches our new epoch
            # (or we learn ours); NOT_CONTROLLER once the controller moved. Keep resending.
            log.info(
                "AlterPartition refused as a whole; will resend",
                broker_id=self.broker_id,
                error=error_name(response.error_code),
                broker_epoch=request.broker_epoch,
            )
            self._count(error_name(response.error_code))
            return self._retry_backoff_s
        answers = parse_response(response)
        answered_all = True
        for item in items:
            result = answers.get(_key(item))
            if result is None:
                answered_all = False
                continue  # left queued: resent with the next request
            self._count(result.name if isinstance(result, Errors) else "NONE")
            with self._cond:
                if self._unsent.get(item.tp) is item:
                    del self._unsent[item.tp]
            try:
                again = item.callback(result)
            except Exception:
                log.exception("AlterPartition callback failed", partition=str(item.tp))
                again = False
            if again:
                self._resubmit_later(item, generation)
        return 0.0 if answered_all else self._retry_backoff_s

    def _resubmit_later(self, item: AlterPartitionItem, generation: int) -> None:
        # Kafka resubmits at once and sends after its 50 ms scheduling delay; without the
        # delay a partition-level NOT_CONTROLLER would be a busy loop against a stale node.
        def resubmit() -> None:
            self.submit(item, generation)

        timer = threading.Timer(self._retry_backoff_s, resubmit)
        timer.daemon = True
        timer.start()

    def _count(self, name: str) -> None:
        with self._cond:
            self.answers[name] = self.answers.get(name, 0) + 1
