"""``free_ports`` never hands out a port twice in a row: the kernel's pick for port 0 can
repeat a port just released, and a controller given equal metrics and gRPC ports refuses to
start (a flake of about 1 in 12,500 draws before)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.zk import server_probes


class _ScriptedSocket:
    """Binds port 0 to the next port of a script; binds a named port unless it is taken."""

    script: Iterator[int]
    taken: set[int] = set()

    def __init__(self, *args: object) -> None:
        self.port = 0

    def bind(self, address: tuple[str, int]) -> None:
        port = address[1]
        if port == 0:
            port = next(self.script)
        elif port in self.taken:
            raise OSError(98, "Address already in use")
        self.port = port

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def __enter__(self) -> _ScriptedSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def kernel_picks(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_ScriptedSocket]]:
    monkeypatch.setattr(server_probes, "_recent", {})
    monkeypatch.setattr(server_probes.socket, "socket", _ScriptedSocket)
    _ScriptedSocket.taken = set()
    yield _ScriptedSocket


def test_a_port_just_handed_out_is_not_handed_out_again(
    kernel_picks: type[_ScriptedSocket],
) -> None:
    kernel_picks.script = iter([40001, 40001, 40001, 40003, 40005])
    metrics = server_probes.free_port()
    grpc = server_probes.free_port()
    assert (metrics, grpc) == (40001, 40003)
    assert server_probes.free_ports(1) == [40005]


def test_free_ports_are_distinct_and_fresh(kernel_picks: type[_ScriptedSocket]) -> None:
    kernel_picks.script = iter([40001, 40007, 40001, 40007, 40009, 40011])
    assert server_probes.free_ports(2) == [40001, 40007]
    assert server_probes.free_ports(2) == [40009, 40011]


def test_a_consecutive_range_avoids_ports_just_handed_out(
    kernel_picks: type[_ScriptedSocket],
) -> None:
    # The stack's ZooKeeper, metrics and gRPC ports, released before the brokers' range is
    # chosen: a range overlapping them would have two servers bind one port.
    kernel_picks.script = iter([40003, 40005, 40007, 40004, 40101])
    assert server_probes.free_ports(3) == [40003, 40005, 40007]
    kernel_picks.taken = {40102}
    # 40004..40006 overlaps; 40101..40103 has 40102 in use; then 40201 is free.
    kernel_picks.script = iter([40004, 40101, 40201])
    assert server_probes.consecutive_free_ports(3) == 40201
    kernel_picks.script = iter([40202, 40301])
    assert server_probes.free_ports(1) == [40301]  # the range is remembered too


def test_the_memory_is_bounded(kernel_picks: type[_ScriptedSocket]) -> None:
    kernel_picks.script = iter(range(1, server_probes._RECENT_LIMIT + 10))
    for _ in range(server_probes._RECENT_LIMIT + 5):
        server_probes.free_port()
    assert len(server_probes._recent) == server_probes._RECENT_LIMIT
    assert 1 not in server_probes._recent  # the oldest went first
