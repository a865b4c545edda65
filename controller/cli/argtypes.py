"""Argument types shared by the admin tools: numbers are refused at parse time, with
argparse's one-line error, when they do not fit what they feed (a protobuf int32, a
ZooKeeper session timeout), instead of failing deep inside with a traceback."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

INT32_MAX = 2**31 - 1


def int_in(low: int, high: int = INT32_MAX) -> Callable[[str], int]:
    """An integer in [low, high] (Kafka's Integer options are int32)."""

    def parse(text: str) -> int:
        value = int(text)  # a ValueError: argparse's own "invalid int value: 'x'"
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {low}..{high}, got {value}")
        return value

    parse.__name__ = "int"  # the type argparse names in that message
    return parse


def seconds(text: str) -> float:
    """A finite, non-negative number of seconds that fits an int32 of milliseconds."""
    value = float(text)  # a ValueError: argparse's own "invalid seconds value: 'x'"
    if not math.isfinite(value) or value < 0 or value * 1000 > INT32_MAX:
        raise argparse.ArgumentTypeError(f"expected 0..{INT32_MAX // 1000} seconds, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """``seconds``, and more than 0: a time-out of 0 would give up before trying."""
    value = seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected more than 0 seconds, got {text!r}")
    return value


#: Milliseconds: a positive int32.
positive_ms = int_in(1)
#: A partition number.
partition_number = int_in(0)
