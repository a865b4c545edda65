"""``SignalInbox``: signals are recorded, and seen by a waiting main thread even when the kernel
delivered them to another thread."""

from __future__ import annotations

import signal
import threading
import time

from controller.signals import SignalInbox


def test_a_signal_delivered_to_another_thread_wakes_the_waiting_main_thread() -> None:
    inbox = SignalInbox((signal.SIGUSR1,))
    try:

        def send_to_self() -> None:
            time.sleep(0.1)
            signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)  # this thread, not main

        sender = threading.Thread(target=send_to_self)
        sender.start()
        assert inbox.wait(10) == signal.SIGUSR1
        sender.join()
    finally:
        inbox.restore()


def test_signals_come_out_in_order_and_the_wait_times_out() -> None:
    previous = signal.getsignal(signal.SIGUSR1)
    inbox = SignalInbox((signal.SIGUSR1, signal.SIGUSR2))
    try:
        signal.raise_signal(signal.SIGUSR2)
        signal.raise_signal(signal.SIGUSR1)
        assert [inbox.wait(1), inbox.wait(1)] == [signal.SIGUSR2, signal.SIGUSR1]
        started = time.monotonic()
        assert inbox.wait(0.3) is None
        assert time.monotonic() - started >= 0.3
    finally:
        inbox.restore()
    assert signal.getsignal(signal.SIGUSR1) == previous
