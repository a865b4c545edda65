"""The per-path watcher holder SetWatches registers with kazoo (controller.zk.setwatches)."""

from __future__ import annotations

from controller.zk.setwatches import Watchers


def test_watchers_add_like_a_set() -> None:
    watchers = Watchers("a")
    for watcher in ("a", "b", "b", "c", "a"):
        watchers.add(watcher)
    assert list(watchers) == ["a", "b", "c"] and len(watchers) == 3
    assert [*[], *Watchers("x")] == ["x"]  # kazoo extends a list with the popped value
