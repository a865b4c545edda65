"""Turning an RPC into a controller event and waiting for the event thread's answer."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from controller.api.errors import (
    ApiError,
    Errors,
    error_for_exception,
    set_controller_hint,
    set_resend_marker,
    wire_code,
)
from controller.api.v1 import common_pb2
from controller.core.events import NotControllerError, ReplyingEvent

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.rpc")

DEFAULT_DEADLINE_S = 30.0
# A caller's deadline further away than this is none (clients that set none get ~9.2e18 s).
_NO_DEADLINE_S = 86_400.0


class RpcStatus(Exception):
    """End the RPC with this gRPC status ("not processed": the caller may resend). ``resend``:
    certainly nothing was queued, and the caller is told so (``set_resend_marker``)."""

    def __init__(self, code: grpc.StatusCode, details: str, *, resend: bool = False) -> None:
        super().__init__(details)
        self.code = code
        self.details = details
        self.resend = resend


class WaitingSlots:
    """A bulkhead: how many RPCs may wait for the event thread at once.

    Each waiting RPC holds a gRPC worker thread until the event thread answers. Unbounded, a
    busy event thread let a few broker requests take every worker, and health checks (how
    load balancers find the active controller) went unanswered. One more RPC than
    ``capacity`` is answered RESOURCE_EXHAUSTED at once: "not processed", which every caller
    (``ControllerClient``) resends. ``None`` is no limit (tests' hand-built servers).
    """

    def __init__(
        self, capacity: int | None, on_refused: Callable[[str], None] | None = None
    ) -> None:
        if capacity is not None and capacity < 1:
            raise ValueError(f"waiting slots must be at least 1, got {capacity}")
        self.capacity = capacity
        self.on_refused = on_refused  # e.g. a metric: how often the bulkhead trips
        self._lock = threading.Lock()
        self.in_use = 0

    def acquire(self, rpc: str) -> None:
        with self._lock:
            full = self.capacity is not None and self.in_use >= self.capacity
            if not full:
                self.in_use += 1
        if full:
            if self.on_refused is not None:
                self.on_refused(rpc)
            raise RpcStatus(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{rpc} not processed: {self.capacity} requests are already waiting for "
                "the controller's event thread; resend it",
                resend=True,
            )

    def release(self) -> None:
        with self._lock:
            self.in_use -= 1


UNBOUNDED = WaitingSlots(None)


def await_reply(
    ctl: Controller,
    event: ReplyingEvent,
    context: grpc.ServicerContext,
    timeout_ms: int = 0,
    *,
    timeout_in_response: bool = False,
    slots: WaitingSlots = UNBOUNDED,
) -> Any:
    """Queue ``event`` and wait for its answer within the caller's deadline.

    Raises ``NotControllerError`` at once on a standby, and ``RpcStatus(RESOURCE_EXHAUSTED)``
    at once when every one of ``slots`` is held (nothing is queued). When the event thread does not
    answer in time, the event stays queued and may still be applied: with
    ``timeout_in_response`` (admin requests, as Kafka's REQUEST_TIMED_OUT) the response says
    so and is not resent by clients; otherwise (broker requests) the
    RPC ends DEADLINE_EXCEEDED and the broker resends it (harmless: a resent AlterPartition or
    ControlledShutdown is answered from the current state; a producer-id block is skipped).
    """
    if not ctl.serving_active:
        # Still "active" with a session loss pending: who is active now is not known here.
        raise NotControllerError(-1 if ctl.is_active else ctl.active_controller_id)
    slots.acquire(event.name)
    try:
        return _queue_and_wait(ctl, event, context, timeout_ms, timeout_in_response)
    finally:
        slots.release()


def _queue_and_wait(
    ctl: Controller,
    event: ReplyingEvent,
    context: grpc.ServicerContext,
    timeout_ms: int,
    timeout_in_response: bool,
) -> Any:
    ctl.put(event)
    remaining = context.time_remaining()
    if remaining is None or remaining > _NO_DEADLINE_S:
        # No deadline: grpcio reports ~9.2e18 s, which no wait takes (OverflowError). The
        # request's own timeout_ms, when it has one, is the caller's word.
        timeout = timeout_ms / 1000 if timeout_ms > 0 else DEFAULT_DEADLINE_S
    else:
        timeout = max(remaining - 0.05, 0.0)
        if timeout_ms > 0:
            timeout = min(timeout, timeout_ms / 1000)
    try:
        return event.reply.result(timeout)
    except FutureTimeout:
        message = f"{event.name} did not finish in time (it may still be applied)"
        if timeout_in_response:
            raise ApiError(Errors.REQUEST_TIMED_OUT, message) from None
        raise RpcStatus(grpc.StatusCode.DEADLINE_EXCEEDED, message) from None
    except NotImplementedError:
        raise RpcStatus(
            grpc.StatusCode.UNIMPLEMENTED, f"{event.name} is not handled by this controller"
        ) from None


def error_code(
    ctl: Controller, exc: BaseException, context: grpc.ServicerContext, rpc: str
) -> common_pb2.ErrorCode:
    """The response error code for ``exc``; NOT_CONTROLLER also names the active controller
    (never this node). An ``RpcStatus`` ends the RPC with its status instead
    (``context.abort`` raises)."""
    if isinstance(exc, RpcStatus):
        if exc.resend:
            set_resend_marker(context)
        context.abort(exc.code, exc.details)
    code = error_for_exception(exc)
    if code == Errors.NOT_CONTROLLER:
        # A controller that has just found itself moved (a fenced ZooKeeper write) still names
        # itself active until its resignation is processed: such a hint sends the caller back.
        if ctl.active_controller_id != ctl.controller_id:
            set_controller_hint(context, ctl.active_controller_id)
    elif code == Errors.UNKNOWN_SERVER_ERROR:
        log.error("controller RPC failed", rpc=rpc, error=str(exc))
    return wire_code(int(code))
