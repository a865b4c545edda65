"""The post-run audit: the safety invariants over ZooKeeper's complete transaction history.

The live checker polls, so it can miss a version that lived less than a poll. The ensemble's
transaction logs hold every accepted write with the session that made it, so here:

* every election is known (the multi creating ``/controller`` and setting
  ``/controller_epoch``), and with it which *session* held each epoch;
* every write a controller session made to the cluster's znodes is checked against the epoch
  current when it committed: the shared ``ControllerWrite`` check by controller id, and here
  by session, which also catches a controller whose *previous* session (a zombie of itself,
  re-elected under the same id) still got a write in;
* every version of every partition state znode goes through the shared checks (controller
  epoch and leader epoch never decrease, leader inside the ISR unless an unclean election was
  recorded), and must carry the epoch of the controller that wrote it;
* writes by controller sessions outside a fenced multi (other than Kafka's unfenced ones,
  §1.5 of the reference) are listed.

Sessions are attributed to controllers by their election multis and by the ephemeral
endpoint znode (``/zk-controller/controllers/<id>``) each controller creates on every session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller import invariants as inv
from controller.chaos.txnlog import CHECK, SET_DATA, Op, Txn, read_ensemble
from controller.zk import paths

_STATE = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")
_ENDPOINT = re.compile(r"^/zk-controller/controllers/(\d+)$")
# Writes Kafka's controller makes without the epoch check (reference §1.5), plus the
# persistent paths every controller ensures at startup and its own endpoint znode.
_UNFENCED_OK = (paths.FEATURE, paths.LATEST_PRODUCER_ID_BLOCK, paths.CLUSTER, paths.CLUSTER_ID,
                paths.CONTROLLER_EPOCH, paths.ADMIN, paths.BROKERS, paths.CONFIG, "/",
                *paths.PERSISTENT_PATHS)  # fmt: skip


@dataclass
class AuditResult:
    transactions: int = 0
    elections: int = 0
    controller_sessions: int = 0
    controller_writes: int = 0
    state_versions: int = 0
    unfenced: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "transactions": self.transactions,
            "elections": self.elections,
            "controller sessions": self.controller_sessions,
            "controller writes": self.controller_writes,
            "state versions": self.state_versions,
            "unfenced writes": len(self.unfenced),
        }


@dataclass(frozen=True, slots=True)
class _Election:
    epoch: int
    zxid: int
    session: int
    controller_id: int


class _Audit:
    def __init__(self, chroot: str, unclean: Iterable[inv.UncleanElection]) -> None:
        self.chroot = chroot.rstrip("/")
        self.result = AuditResult()
        # Unclean elections only explain leaders outside the ISR here: whether each was
        # allowed is judged live (LiveChecker), where the workload's permissions are known.
        self.checker = inv.Checker(unclean_default=True)
        for election in unclean:
            self.checker.observe_unclean_election(election)
        self.sessions: dict[int, int] = {}  # session -> controller id
        self.current: _Election | None = None
        self.czxid: dict[str, int] = {}
        self._own: list[str] = []

    def _rel(self, path: str) -> str | None:
        if not self.chroot:
            return path
        if path == self.chroot:
            return "/"
        if path.startswith(self.chroot + "/"):
            return path[len(self.chroot) :]
        return None  # outside the cluster's chroot

    def feed(self, txn: Txn) -> None:
        self.result.transactions += 1
        ops = [(rel, op) for op in txn.ops if (rel := self._rel(op.path)) is not None]
        if txn.failed or not ops:
            return
        by_path = {rel: op for rel, op in ops}
        created = by_path.get(paths.CONTROLLER)
        bumped = by_path.get(paths.CONTROLLER_EPOCH)
        if (
            created is not None
            and created.is_create
            and bumped is not None
            and (bumped.type == SET_DATA)
        ):
            self._election(txn, created, bumped)
            return
        for rel, op in ops:
            endpoint = _ENDPOINT.match(rel)
            if endpoint and op.is_create:
                self.sessions.setdefault(txn.session, int(endpoint.group(1)))
        fenced = any(rel == paths.CONTROLLER_EPOCH and op.type == CHECK for rel, op in ops)
        writes = [(rel, op) for rel, op in ops if op.type != CHECK]
        controller = self.sessions.get(txn.session)
        for rel, op in writes:
            state = _STATE.match(rel)
            if state:
                self._state(txn, rel, op, state.group(1), int(state.group(2)), controller)
            if controller is None or rel.startswith("/zk-controller"):
                continue
            if not fenced and not (op.is_create and rel in _UNFENCED_OK) and rel not in (
                paths.FEATURE, paths.LATEST_PRODUCER_ID_BLOCK,
            ):  # fmt: skip
                self.result.unfenced.append(
                    f"zxid {txn.zxid:#x}: controller {controller} {_verb(op)} {rel} unfenced"
                )
            if op.is_create and rel in _UNFENCED_OK:
                continue
            self._controller_write(txn, rel, controller)

    def _election(self, txn: Txn, created: Op, bumped: Op) -> None:
        try:
            controller_id = int(json.loads(created.data)["brokerid"])
            epoch = int(bumped.data)
        except (ValueError, KeyError, TypeError):
            self._own.append(f"[{inv.SINGLE_WRITER}] zxid {txn.zxid:#x}: unreadable election")
            return
        if self.current is not None and epoch != self.current.epoch + 1:
            self._own.append(
                f"[{inv.SINGLE_WRITER}] zxid {txn.zxid:#x}: controller {controller_id} "
                f"registered epoch {epoch} after epoch {self.current.epoch}"
            )
        self.current = _Election(epoch, txn.zxid, txn.session, controller_id)
        self.sessions[txn.session] = controller_id
        self.result.elections += 1
        # The election multi is the epoch's first write: another controller's write accepted
        # in this epoch conflicts with it in the shared check.
        self.checker.observe_controller_write(
            inv.ControllerWrite(controller_id, epoch, paths.CONTROLLER)
        )

    def _controller_write(self, txn: Txn, rel: str, controller: int) -> None:
        self.result.controller_writes += 1
        current = self.current
        where = f"zxid {txn.zxid:#x} ({rel})"
        if current is None:
            self._own.append(
                f"[{inv.SINGLE_WRITER}] {where}: controller {controller} wrote before any "
                "controller was elected"
            )
            return
        self.checker.observe_controller_write(inv.ControllerWrite(controller, current.epoch, rel))
        if txn.session != current.session and controller == current.controller_id:
            # Same id, other session: the shared check (by id) cannot tell them apart.
            self._own.append(
                f"[{inv.SINGLE_WRITER}] {where}: session {txn.session:#x} of controller "
                f"{controller} wrote in epoch {current.epoch}, which its session "
                f"{current.session:#x} holds"
            )

    def _state(
        self, txn: Txn, rel: str, op: Op, topic: str, partition: int, controller: int | None
    ) -> None:
        if op.is_delete:
            self.czxid.pop(rel, None)
            self.checker.observe_state_deleted(topic, partition)
            return
        if op.is_create:
            self.czxid[rel] = txn.zxid
        try:
            obj = json.loads(op.data)
            write = inv.StateWrite(
                topic, partition, self.czxid.get(rel, 0), op.version,
                int(obj["controller_epoch"]), int(obj["leader"]), int(obj["leader_epoch"]),
                tuple(int(b) for b in obj["isr"]),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError):
            self._own.append(f"[state-unreadable] zxid {txn.zxid:#x}: {rel} {op.data!r}")
            return
        self.result.state_versions += 1
        self.checker.observe_state_write(write)
        current = self.current
        if controller is None:
            self._own.append(
                f"[{inv.SINGLE_WRITER}] zxid {txn.zxid:#x}: {rel} written by session "
                f"{txn.session:#x}, which is no controller's"
            )
        elif current is not None and write.controller_epoch != current.epoch:
            self._own.append(
                f"[{inv.SINGLE_WRITER}] zxid {txn.zxid:#x}: {rel} v{op.version} carries "
                f"controller epoch {write.controller_epoch} but committed in epoch "
                f"{current.epoch} (written by controller {controller})"
            )

    def finish(self) -> AuditResult:
        self.result.controller_sessions = len(self.sessions)
        self.result.violations = self._own + [str(v) for v in self.checker.violations()]
        return self.result


def _verb(op: Op) -> str:
    return "created" if op.is_create else "deleted" if op.is_delete else "wrote"


def audit_transactions(
    txns: Sequence[Txn], chroot: str = "", unclean: Iterable[inv.UncleanElection] = ()
) -> AuditResult:
    audit = _Audit(chroot, unclean)
    for txn in txns:
        audit.feed(txn)
    return audit.finish()


def audit_ensemble(
    data_dirs: Iterable[Path], chroot: str = "", unclean: Iterable[inv.UncleanElection] = ()
) -> AuditResult:
    """Audit the union of the servers' transaction logs (read after the servers stopped)."""
    return audit_transactions(read_ensemble(data_dirs), chroot, unclean)
