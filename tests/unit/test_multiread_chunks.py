"""Multi-read requests are bounded by count and by size (ZooKeeper's jute.maxbuffer)."""

from __future__ import annotations

import itertools

from controller.zk.multiread import MAX_REQUEST_BYTES, MultiReadRequest, chunk_bounds


def request_bytes(paths: list[str]) -> int:
    return len(MultiReadRequest(paths).serialize())


def test_chunks_cover_every_path_in_order_within_count_and_size() -> None:
    paths = [f"/brokers/topics/{'t' * (i % 300)}{i}" for i in range(5000)]
    bounds = chunk_bounds(paths, 1000, max_bytes=64 * 1024)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(paths)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    for start, end in bounds:
        assert 0 < end - start <= 1000
        assert request_bytes(paths[start:end]) <= 64 * 1024 + 9  # + the closing header
    assert len(bounds) > 5  # the size bound, not only the count, split them


def test_count_bound_alone_for_short_paths() -> None:
    paths = [f"/p{i}" for i in range(2500)]
    assert chunk_bounds(paths, 1000) == [(0, 1000), (1000, 2000), (2000, 2500)]


def test_a_path_longer_than_the_bound_goes_alone_and_the_chroot_counts() -> None:
    big = "/" + "x" * (MAX_REQUEST_BYTES + 10)
    assert chunk_bounds(["/a", big, "/b"], 1000) == [(0, 1), (1, 2), (2, 3)]
    # 600 bytes of path each: three fit in 2 KB without a chroot, not with a long one.
    paths = ["/" + "p" * 599] * 3
    assert chunk_bounds(paths, 1000, max_bytes=2048) == [(0, 3)]
    assert chunk_bounds(paths, 1000, chroot="/" + "c" * 200, max_bytes=2048) == [(0, 2), (2, 3)]
    # Non-ASCII paths count their UTF-8 bytes.
    assert chunk_bounds(["/" + "é" * 400] * 3, 1000, max_bytes=2048) == [(0, 2), (2, 3)]


def test_no_paths_no_chunks() -> None:
    assert chunk_bounds([], 1000) == []
