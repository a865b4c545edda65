"""The active controller's heap: garbage-collector settings, and memory handed back after a
failover (``freeze_heap_after_failover``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
import time
from collections.abc import Callable

from controller.channel.manager import ControllerChannelManager
from controller.core.controller import Controller

# The active controller holds several long-lived objects per partition (over a million at
# 100K partitions). With CPython's default thresholds (700, 10, 10) the cyclic collector ran
# so often while they were built that it took ~30% of a failover's CPU; these make young
# collections ~100x rarer. Once the context is loaded it is frozen (never scanned again by the
# collector) until the controller resigns, so full collections stay short while it is active.
GC_THRESHOLDS = (100_000, 50, 100)
TRIM_WAIT_S = 60.0
TRIM_SETTLE_S = 2.0


def _malloc_trim() -> Callable[[int], object] | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def freeze_heap_after_failover(controller: Controller, channel: ControllerChannelManager) -> None:
    """GC freeze at failover; and once the failover's requests have been sent, hand the memory
    they used back to the OS (glibc keeps freed heap pages otherwise, so RSS would stay at the
    failover's peak: its LeaderAndIsr and UpdateMetadata requests alone are ~100 MB at 100K
    partitions)."""
    trim = _malloc_trim()

    def trim_when_sent() -> None:
        # Off the event thread: wait for the queues to drain, and for the requests in flight
        # to be answered (no API tells; a few seconds are plenty on a healthy cluster).
        deadline = time.monotonic() + TRIM_WAIT_S
        while channel.total_queue_size() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(TRIM_SETTLE_S)
        assert trim is not None
        trim(0)

    def after_failover() -> None:
        # A resignation and a new election within one event (a Reelect) skip the unfreeze
        # below: unfreeze first, so the previous term's garbage is not pinned for good.
        if gc.get_freeze_count():
            gc.unfreeze()
            gc.collect()
        gc.freeze()
        if trim is not None:
            threading.Thread(target=trim_when_sent, name="malloc-trim", daemon=True).start()

    def unfreeze_when_inactive(ctl: Controller) -> None:
        if not ctl.is_active and gc.get_freeze_count():
            gc.unfreeze()  # the resigned context's cycles become collectable again

    controller.election.add_failover_hook(after_failover)
    controller.after_event_hooks.append(unfreeze_when_inactive)
