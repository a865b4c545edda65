"""The broker side of controlled shutdown (Kafka's ``KafkaServer.controlledShutdown``, §2.9).

Before a broker deregisters, it asks the active controller to move its leaderships away
(``ControllerService.ControlledShutdown`` with its id and current epoch) so that no partition
is left without a leader when it goes. Kafka's loop, with Kafka's settings:

* ``controlled.shutdown.enable`` (true): skip the whole thing when false;
* ``controlled.shutdown.max.retries`` (3): the number of attempts;
* ``controlled.shutdown.retry.backoff.ms`` (5000): the pause between attempts.

An attempt succeeds when the controller answers NONE with no remaining partitions. It fails
when no controller is registered, when the controller cannot be reached, when it answers an
error (STALE_BROKER_EPOCH, BROKER_NOT_AVAILABLE, ...), or when partitions remain (typically
this broker is the last in-sync replica). After the last attempt the broker shuts down anyway
("unclean shutdown"), as Kafka's does.

One attempt is one RPC, as in Kafka (``NetworkClientUtils.awaitReady`` throws as soon as the
connection fails): a controller without an advertised address or whose address refuses the
connection fails the attempt at once, and only the backoff is waited. The request timeout
bounds only a controller that accepts the call and then does not answer. So the worst case is
``max_retries`` x request timeout + (``max_retries`` - 1) x backoff (100 s with Kafka's
defaults); a controller that is down costs about the backoffs alone (10 s).

``abandon`` lets the caller cut the loop short (the broker: a second SIGTERM/SIGINT): it is
asked after each failed attempt and after each backoff, and a reason it returns skips the
remaining attempts straight to the unclean shutdown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from controller.admin.controller_client import ControllerClient, NoActiveControllerError
from controller.api.errors import Errors, error_name
from controller.api.v1 import controller_pb2
from controller.security.tls import PLAINTEXT, ChannelOpener
from controller.zk.errors import MalformedZnodeError, ZkError
from controller.zk.port import ZkPort

log = structlog.get_logger("controller.broker.shutdown")

# Kafka's defaults (reference §5.2).
DEFAULT_ENABLE = True
DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRY_BACKOFF_MS = 5000
#: Kafka bounds one attempt by controller.socket.timeout.ms / request.timeout.ms (30 s).
DEFAULT_REQUEST_TIMEOUT_MS = 30_000


@dataclass(frozen=True, slots=True)
class ControlledShutdownSettings:
    enable: bool = DEFAULT_ENABLE
    max_retries: int = DEFAULT_MAX_RETRIES
    retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS

    def __post_init__(self) -> None:
        if self.max_retries < 1:
            raise ValueError(
                f"controlled.shutdown.max.retries must be >= 1, got {self.max_retries}"
            )
        if self.retry_backoff_ms < 0:
            raise ValueError(
                f"controlled.shutdown.retry.backoff.ms must be >= 0, got {self.retry_backoff_ms}"
            )
        if self.request_timeout_ms <= 0:
            raise ValueError(f"request timeout must be positive, got {self.request_timeout_ms}")


@dataclass(frozen=True, slots=True)
class ShutdownAttempt:
    """One ControlledShutdown attempt: ``error`` is a Kafka error name, or a description of
    why no answer came back; ``remaining`` the partitions the broker still leads."""

    error: str | None
    remaining: tuple[str, ...] = ()

    @property
    def succeeded(self) -> bool:
        return self.error is None and not self.remaining


def request_controlled_shutdown(
    zk: ZkPort,
    broker_id: int,
    broker_epoch: int,
    timeout_s: float,
    *,
    channel_opener: ChannelOpener = PLAINTEXT,
) -> ShutdownAttempt:
    """One attempt: one ControlledShutdown RPC to the active controller (following a
    NOT_CONTROLLER hint once), bounded by ``timeout_s``; an unreachable controller fails it
    at once."""
    client = ControllerClient(zk, timeout_s=timeout_s, channel_opener=channel_opener)
    try:
        if client.active_controller_id() is None:
            # Kafka: "No controller present, will retry shutdown." -- no waiting here; the
            # backoff between attempts is the wait.
            return ShutdownAttempt("no controller is registered in /controller")
        request = controller_pb2.ControlledShutdownRequest(
            broker_id=broker_id, broker_epoch=broker_epoch
        )
        response = client.controller_once("ControlledShutdown", request)
    except (NoActiveControllerError, ZkError, MalformedZnodeError) as exc:
        return ShutdownAttempt(str(exc))
    finally:
        client.close()
    if response.error_code != Errors.NONE:
        return ShutdownAttempt(error_name(response.error_code))
    remaining = tuple(f"{tp.topic}-{tp.partition}" for tp in response.remaining_partitions)
    return ShutdownAttempt(None, remaining)


def controlled_shutdown(
    zk: ZkPort,
    broker_id: int,
    broker_epoch: Callable[[], int],
    settings: ControlledShutdownSettings,
    *,
    sleep: Callable[[float], None] = time.sleep,
    channel_opener: ChannelOpener = PLAINTEXT,
    abandon: Callable[[], str | None] = lambda: None,
) -> bool:
    """Kafka's broker loop; True when the controller moved every leadership away.

    ``broker_epoch`` is read at each attempt: a broker that re-registered meanwhile (new
    session) must send its new epoch, or the controller would call it stale. ``abandon``
    returns why to give up now (None: carry on); ``sleep`` may return early for it.
    """
    if not settings.enable:
        log.info("controlled shutdown is disabled", broker_id=broker_id)
        return False
    log.info("starting controlled shutdown", broker_id=broker_id)
    for attempt in range(1, settings.max_retries + 1):
        outcome = request_controlled_shutdown(
            zk,
            broker_id,
            broker_epoch(),
            settings.request_timeout_ms / 1000,
            channel_opener=channel_opener,  # TLS to the controller when the broker has it
        )
        if outcome.succeeded:
            log.info("controlled shutdown succeeded", broker_id=broker_id, attempt=attempt)
            return True
        left = settings.max_retries - attempt
        if outcome.error is not None:
            log.warning(
                "controlled shutdown attempt failed",
                broker_id=broker_id,
                attempt=attempt,
                error=outcome.error,
                retries_remaining=left,
            )
        else:
            log.warning(
                "controlled shutdown attempt left partitions led by this broker",
                broker_id=broker_id,
                attempt=attempt,
                remaining=list(outcome.remaining),
                retries_remaining=left,
            )
        if not left:
            break
        reason = abandon()
        if reason is None:
            sleep(settings.retry_backoff_ms / 1000)
            reason = abandon()
        if reason is not None:
            log.warning(
                "skipping the remaining controlled shutdown attempts; proceeding to do an "
                "unclean shutdown",
                broker_id=broker_id,
                reason=reason,
                attempts_skipped=left,
            )
            return False
    log.warning(
        "proceeding to do an unclean shutdown as all the controlled shutdown attempts failed",
        broker_id=broker_id,
    )
    return False
