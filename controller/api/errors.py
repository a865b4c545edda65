"""Kafka error codes on the Python side, and the gRPC conventions for reporting them.

``Errors`` mirrors the protobuf ``zkcontroller.v1.ErrorCode`` enum (a unit test keeps the two
identical) so that controller code can say ``Errors.NOT_CONTROLLER`` without importing
generated code, and so that the numbers are Kafka's.

Error convention (documented for broker authors in docs/broker-protocol.md):

* Every outcome that Kafka's protocol reports in an ``ErrorCode`` field is reported in the
  response's ``error_code`` field(s), with gRPC status OK. That includes NOT_CONTROLLER: a
  controller node that is not active answers ControlledShutdown/AlterPartition with
  ``error_code = NOT_CONTROLLER``.
* When such a node knows the active controller, it also sets the trailing-metadata key
  ``controller-id`` to that broker id, as a hint (``set_controller_hint`` /
  ``controller_hint``). Clients may ignore it and read ``/controller`` instead.
* A non-OK gRPC status means "not processed": transport failures (UNAVAILABLE,
  DEADLINE_EXCEEDED, CANCELLED), too many requests already waiting for the event thread
  (RESOURCE_EXHAUSTED), a malformed request (INVALID_ARGUMENT) or a server bug (INTERNAL,
  UNKNOWN). Callers may resend the same request. The refusals that are nothing but "resend
  it" (the bulkhead's RESOURCE_EXHAUSTED) also carry the trailing-metadata key ``resend``
  (``set_resend_marker`` / ``has_resend_marker``): a client cannot tell a status the server
  sent from one its own gRPC library made up after the request was processed (a
  RESOURCE_EXHAUSTED "Received message larger than max", a connection lost mid-call), so
  ``ControllerClient`` resends only on the marker, not on a status code.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import cast

import grpc

from controller.api.v1 import common_pb2
from controller.core.events import NotControllerError
from controller.zk.errors import ControllerMovedError

CONTROLLER_ID_METADATA_KEY = "controller-id"
RESEND_METADATA_KEY = "resend"


class Errors(enum.IntEnum):
    """Kafka's error codes that this protocol uses (names and numbers of ``Errors.java``)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    STALE_CONTROLLER_EPOCH = 11
    NETWORK_EXCEPTION = 13
    INVALID_TOPIC_EXCEPTION = 17
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    REASSIGNMENT_IN_PROGRESS = 60
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    UNKNOWN_TOPIC_ID = 100
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108

    @classmethod
    def for_code(cls, code: int) -> Errors:
        """Kafka's ``Errors.forCode``: an unknown code reads as UNKNOWN_SERVER_ERROR."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR

    @classmethod
    def for_name(cls, name: str) -> Errors:
        """The error with this Kafka name (``"NOT_CONTROLLER"``); ``KeyError`` if unknown."""
        return cls[name]


def wire_code(code: int) -> common_pb2.ErrorCode:
    """``code`` for a response's ``error_code`` field. Protobuf takes any int there, but the
    generated stubs type the field as the enum alone, so this is where the checker is told."""
    return cast("common_pb2.ErrorCode", code)


def error_name(code: int) -> str:
    """A code's Kafka name for logs, keeping unknown codes visible (``"UNKNOWN(-99)"``)."""
    try:
        return Errors(code).name
    except ValueError:
        return f"UNKNOWN({code})"


class ApiError(Exception):
    """An exception that maps to one Kafka error code in a response.

    Raise ``ApiError(Errors.X, "why")`` from request handlers; ``error_for_exception`` turns it
    into the code, as Kafka's ``Errors.forException`` does.
    """

    def __init__(self, error: Errors, message: str = "") -> None:
        self.error = error
        super().__init__(message or error.name)


def error_for_exception(exc: BaseException) -> Errors:
    """The error code a response carries for ``exc`` (Kafka's ``Errors.forException``)."""
    if isinstance(exc, ApiError):
        return exc.error
    if isinstance(exc, ControllerMovedError | NotControllerError):
        return Errors.NOT_CONTROLLER
    return Errors.UNKNOWN_SERVER_ERROR


def set_controller_hint(context: grpc.ServicerContext, controller_id: int | None) -> None:
    """Server side: tell a NOT_CONTROLLER caller who the active controller is, if known."""
    if controller_id is not None and controller_id >= 0:
        context.set_trailing_metadata(((CONTROLLER_ID_METADATA_KEY, str(controller_id)),))


def controller_hint(trailing_metadata: Iterable[tuple[str, str | bytes]] | None) -> int | None:
    """Client side: the active controller id from a response's trailing metadata, if any.

    Pass ``call.trailing_metadata()`` (from ``stub.Rpc.with_call(...)``) or an
    ``RpcError``'s ``trailing_metadata()``.
    """
    for key, value in trailing_metadata or ():
        if key == CONTROLLER_ID_METADATA_KEY:
            text = value.decode() if isinstance(value, bytes) else value
            try:
                return int(text)
            except ValueError:
                return None
    return None


def set_resend_marker(context: grpc.ServicerContext) -> None:
    """Server side: this non-OK status means "not processed, resend it" (nothing was queued)."""
    context.set_trailing_metadata(((RESEND_METADATA_KEY, "1"),))


def has_resend_marker(trailing_metadata: Iterable[tuple[str, str | bytes]] | None) -> bool:
    """Client side: whether an ``RpcError``'s ``trailing_metadata()`` says "resend it"."""
    return any(key == RESEND_METADATA_KEY for key, _ in trailing_metadata or ())
