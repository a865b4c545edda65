"""Formatting state-change records as JSON lines, with the noise real log shipping adds.

Speed matters here (the benchmark needs ten million lines), so records are formatted with
f-strings rather than ``json.dumps``: every string the simulator emits is a plain identifier
that needs no escaping, and the timestamp prefix is cached per second.
"""

from __future__ import annotations

import random
import time
from collections import deque
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True, slots=True)
class Noise:
    """Per-line probabilities of the defects a shipped log picks up."""

    duplicate: float = 0.0005  # at-least-once shipping re-sends a line
    disorder: float = 0.0005  # a line arrives late, after some of its successors
    malformed: float = 0.00002  # a torn or foreign line

    @classmethod
    def none(cls) -> Noise:
        return cls(0.0, 0.0, 0.0)


def _js(value: str | None) -> str:
    return "null" if value is None else f'"{value}"'


def _ji(value: int | None) -> str:
    return "null" if value is None else str(value)


class RecordWriter:
    """Writes one cluster's records, counting lines against a budget."""

    def __init__(
        self,
        out: TextIO,
        cluster: str | None,
        budget: int,
        rng: random.Random,
        noise: Noise,
    ) -> None:
        self._out = out
        # The controller itself may not write "cluster"; the generator can leave it out too.
        self._tail = "}\n" if cluster is None else f',"cluster":"{cluster}"}}\n'
        self.budget = budget
        self.lines = 0
        self._rng = rng
        self._noise = noise
        self._sec = -1
        self._prefix = ""
        self._late: deque[tuple[int, str]] = deque()  # (release after line N, text)
        self._buf: list[str] = []

    @property
    def full(self) -> bool:
        return self.lines >= self.budget

    def _ts(self, ts_us: int) -> str:
        sec, us = divmod(ts_us, 1_000_000)
        if sec != self._sec:
            self._sec = sec
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        return f"{self._prefix}.{us:06d}Z"

    def emit(
        self,
        ts_us: int,
        seq: int,
        controller_id: int,
        epoch: int,
        kind: str,
        topic: str | None,
        partition: int | None,
        replica: int | None,
        from_state: str | None,
        to_state: str,
        leader: int | None,
        leader_epoch: int | None,
        isr: list[int] | None,
        election: str | None,
        event: str,
        result: str = "ok",
        error: str | None = None,
    ) -> None:
        if self.lines >= self.budget:
            return
        isr_text = "null" if isr is None else "[" + ",".join(map(str, isr)) + "]"
        line = (
            f'{{"ts":"{self._ts(ts_us)}","seq":{seq},"controller_id":{controller_id},'
            f'"controller_epoch":{epoch},"kind":"{kind}","topic":{_js(topic)},'
            f'"partition":{_ji(partition)},"replica":{_ji(replica)},'
            f'"from_state":{_js(from_state)},"to_state":"{to_state}","leader":{_ji(leader)},'
            f'"leader_epoch":{_ji(leader_epoch)},"isr":{isr_text},"election":{_js(election)},'
            f'"event":"{event}","result":"{result}","error":{_js(error)}'
        ) + self._tail
        self._write(line)

    def _write(self, line: str) -> None:
        noise = self._noise
        rng = self._rng
        if noise.malformed and rng.random() < noise.malformed:
            line = _mangle(line, rng)
        if noise.disorder and rng.random() < noise.disorder:
            self._late.append((self.lines + rng.randint(1, 40), line))
            self.lines += 1
            return
        self._put(line)
        if noise.duplicate and rng.random() < noise.duplicate and self.lines < self.budget:
            self._put(line)

    def _put(self, line: str) -> None:
        buf = self._buf
        buf.append(line)
        self.lines += 1
        while self._late and self._late[0][0] <= self.lines:
            buf.append(self._late.popleft()[1])
        if len(buf) >= 4096:
            self._out.write("".join(buf))
            buf.clear()

    def close(self) -> None:
        """Flush, releasing any lines still held back (they were already counted)."""
        self._buf.extend(text for _, text in self._late)
        self._late.clear()
        self._out.write("".join(self._buf))
        self._buf.clear()


def _mangle(line: str, rng: random.Random) -> str:
    """A line as log shipping breaks them: torn mid-record, a foreign log line, a bad type."""
    choice = rng.randrange(3)
    if choice == 0:
        return line[: rng.randint(1, len(line) - 2)] + "\n"
    if choice == 1:
        return "[2026-11-22 10:15:30,123] WARN Session expired (org.apache.zookeeper)\n"
    head, _, rest = line.partition('"seq":')
    number, _, tail = rest.partition(",")
    return f'{head}"seq":"x{number}",{tail}'
