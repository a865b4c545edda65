"""The refusal log's limiter (the interceptor itself is exercised over real gRPC in
tests/integration/test_security_grpc.py)."""

from __future__ import annotations

from controller.security.authz import RefusalLogLimiter, peer_host


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_caller_method_and_status_is_logged_once_an_interval_with_the_count() -> None:
    clock = Clock()
    limiter = RefusalLogLimiter(interval_s=60, clock=clock)
    key = ("ipv4:10.0.0.5", "PERMISSION_DENIED", "zkcontroller.v1.AdminService/ElectLeaders")
    assert limiter.admit(key) == 0  # the first one, nothing suppressed before it
    clock.now += 0.1
    assert limiter.admit(key) is None
    assert limiter.admit(key) is None
    # Another method, status or host is its own story.
    assert limiter.admit((*key[:2], "zkcontroller.v1.AdminService/CreateTopics")) == 0
    assert limiter.admit(("ipv4:10.0.0.6", *key[1:])) == 0
    assert limiter.admit((key[0], "UNAUTHENTICATED", key[2])) == 0
    clock.now += 59.8  # 59.9 s after the first: still inside the interval
    assert limiter.admit(key) is None
    clock.now += 0.1
    assert limiter.admit(key) == 3  # the three not logged since
    assert limiter.admit(key) is None
    clock.now += 61
    assert limiter.admit(key) == 1


def test_the_limiter_forgets_rather_than_grows_without_bound() -> None:
    clock = Clock()
    limiter = RefusalLogLimiter(interval_s=60, clock=clock)
    for i in range(RefusalLogLimiter.MAX_KEYS):
        assert limiter.admit((f"ipv4:10.0.{i // 256}.{i % 256}", "X", "m")) == 0
    assert limiter.admit(("ipv4:10.0.0.0", "X", "m")) is None  # still remembered
    assert limiter.admit(("ipv4:192.168.0.1", "X", "m")) == 0  # past the bound: all forgotten
    assert limiter.admit(("ipv4:10.0.0.0", "X", "m")) == 0
    assert len(limiter._seen) == 2


def test_peer_host_drops_the_port() -> None:
    assert peer_host("ipv4:10.0.0.5:51234") == "ipv4:10.0.0.5"
    assert peer_host("ipv6:[::1]:51234") == "ipv6:[::1]"
    assert peer_host("unix:/run/zkc.sock") == "unix:/run/zkc.sock"
