"""``SignalInbox``: signals are recorded, and seen by a waiting main thread even when the kernel
delivered them to another thread."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from controller.signals import SignalInbox, record_early
from tests.support import free_port


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


def test_signals_recorded_early_go_to_the_inbox_made_for_them() -> None:
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGUSR1, signal.SIGUSR2)}
    try:
        record_early((signal.SIGUSR1, signal.SIGUSR2))
        signal.raise_signal(signal.SIGUSR2)
        signal.raise_signal(signal.SIGUSR1)
        signal.raise_signal(signal.SIGUSR2)
        first = SignalInbox((signal.SIGUSR1,))
        assert first.wait(0) == signal.SIGUSR1
        assert first.wait(0) is None  # SIGUSR2 is not this inbox's: left for its own
        second = SignalInbox((signal.SIGUSR2,))
        assert [second.wait(0), second.wait(0), second.wait(0)] == [
            signal.SIGUSR2, signal.SIGUSR2, None,
        ]  # fmt: skip
        first.restore()
        second.restore()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# The real CLI's ``run``, its command modules' import held up until the test has sent
# SIGTERM: the signal lands before the daemon's own handler exists. ZooKeeper is a closed
# port, so the start is still trying to connect when the daemon looks at its signals.
_EARLY_SIGTERM_CHILD = """
import sys
from controller.cli import main as cli

build = cli.build_parser

def held_up_build_parser():
    print("importing", flush=True)
    sys.stdin.readline()  # the test has sent SIGTERM
    return build()

cli.build_parser = held_up_build_parser
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_sigterm_while_the_daemon_imports_stops_it_cleanly(tmp_path: Path) -> None:
    args = [
        "run", "--zookeeper", f"127.0.0.1:{free_port()}", "--controller-id", "0",
        "--metrics-listen", f"127.0.0.1:{free_port()}",
        "--grpc-listen", f"127.0.0.1:{free_port()}", "--log-dir", str(tmp_path),
    ]  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-c", _EARLY_SIGTERM_CHILD, *args], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "importing"
        child.send_signal(signal.SIGTERM)
        time.sleep(0.2)  # let it arrive before the imports go on
        child.stdin.write("go\n")
        child.stdin.flush()
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, out  # not -15: the signal was kept, not fatal
    assert "stop requested while starting" in out
