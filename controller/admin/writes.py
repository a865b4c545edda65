"""The write helpers every admin operation shares: one ZooKeeper multi per request, parents
included, so a refused or failed request changes nothing."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from controller.zk.errors import NoNodeError
from controller.zk.port import Create, Op, ZkPort


def missing_parents(port: ZkPort, path: str, seen: set[str]) -> list[Op]:
    """Create ops for the missing ancestors of ``path``, top-down (Kafka's createRecursive)."""
    missing: list[str] = []
    parent = posixpath.dirname(path)
    while parent not in ("/", "") and parent not in seen and port.exists(parent) is None:
        missing.append(parent)
        parent = posixpath.dirname(parent)
    seen.update(missing)
    return [Create(p) for p in reversed(missing)]


def commit(port: ZkPort, ops: Sequence[Op]) -> tuple[int, Exception] | None:
    """Run the multi; None on success, else (index, error) of the op that failed."""
    results = port.multi(ops)
    for i, result in enumerate(results):
        if result.error is not None and result.error.code != "ROLLEDBACK":
            return i, result.error
    return None


def holds(port: ZkPort, path: str, data: bytes) -> bool:
    """Whether ``path`` has exactly ``data``: after a write that failed only on its resend
    (the first attempt committed and its reply was lost), the write is ours and done."""
    try:
        return port.get(path)[0] == data
    except NoNodeError:
        return False
