"""``/controller`` and ``/controller_epoch`` (reference §1.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.zk import paths
from controller.zk.codecs._json import (
    INT32_MAX,
    dumps,
    fail,
    informational_decimal,
    int_field,
    load,
)


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """The full content of ``/controller``."""

    version: int
    broker_id: int
    timestamp_ms: int
    kraft_controller_epoch: int = -1  # -1: a ZK controller (v1 nodes have no such field)


def encode_controller(
    broker_id: int, timestamp_ms: int, *, version: int = 1, kraft_controller_epoch: int = -1
) -> bytes:
    """v1 (Kafka <= 3.3) or v2 (3.4+, adds ``kraftControllerEpoch``)."""
    doc: dict[str, Any] = {"version": version, "brokerid": broker_id}
    doc["timestamp"] = str(timestamp_ms)
    if version == 2:
        doc["kraftControllerEpoch"] = kraft_controller_epoch
    elif version != 1:
        raise ValueError(f"unsupported /controller version {version}")
    return dumps(doc)


def decode_controller_full(
    data: bytes | None, path: str = paths.CONTROLLER
) -> ControllerRegistration:
    """As Kafka's ControllerZNode.decodeController, only ``brokerid`` and (when present, in
    any version) ``kraftControllerEpoch`` are read: ``version`` (0 when not an integer) and
    ``timestamp`` (0 when missing or not a decimal string) refuse nothing."""
    obj = load(data, path)
    version = obj.get("version")
    broker_id = int_field(obj, "brokerid", path, 0)
    timestamp = informational_decimal(obj, "timestamp")
    present = "kraftControllerEpoch" in obj
    kraft_epoch = int_field(obj, "kraftControllerEpoch", path, -1) if present else -1
    return ControllerRegistration(
        version if type(version) is int else 0, broker_id, timestamp, kraft_epoch
    )


def decode_controller(data: bytes | None, path: str = paths.CONTROLLER) -> int:
    """The active controller's id. A v2 node of a migrating KRaft controller decodes too."""
    return decode_controller_full(data, path).broker_id


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes | None, path: str = paths.CONTROLLER_EPOCH) -> int:
    """A bare decimal string, not JSON (pitfall 25)."""
    raw = bytes(data or b"")
    if not raw.isdigit() or len(raw) > 10 or int(raw) > INT32_MAX:  # isdigit: ASCII only
        fail(path, "epoch", f"expected a decimal string up to {INT32_MAX}, got {raw[:40]!r}")
    return int(raw)
