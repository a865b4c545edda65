"""How large a znode this process may read and write: the ensemble's ``jute.maxbuffer``.

ZooKeeper drops the connection on any request larger than its ``jute.maxbuffer`` (1 MiB - 1
by default), and kazoo then resends it for ever, so writes are bounded before they are sent.
Operators of large clusters raise ``jute.maxbuffer`` on the servers (and on Kafka's clients):
the setting ``zookeeper.jute.maxbuffer`` tells this process the value, ``configure`` applies
it once at start, and every size bound derives from it: the largest payload the codecs read,
the largest fenced write, the admin tools' topic-size check.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_JUTE_MAXBUFFER = 0xFFFFF  # ZooKeeper's default, 1 MiB - 1
MIN_JUTE_MAXBUFFER = 64 * 1024
# Room a single write item leaves for the epoch check op and the framing op_size leaves out.
_WRITE_HEADROOM = 4096
# Room a topic znode the admin tools create leaves for a reassignment's adding/removing maps.
_TOPIC_HEADROOM = 48_576


@dataclass(frozen=True, slots=True)
class JuteLimits:
    maxbuffer: int = DEFAULT_JUTE_MAXBUFFER

    @property
    def is_default(self) -> bool:
        return self.maxbuffer == DEFAULT_JUTE_MAXBUFFER

    @property
    def read_bytes(self) -> int:
        """The largest znode payload the codecs parse (a larger one cannot have been written)."""
        return max(self.maxbuffer + 1, 1024 * 1024)

    @property
    def write_item_bytes(self) -> int:
        """The largest group of ops one fenced write item may carry."""
        return self.maxbuffer + 1 - _WRITE_HEADROOM

    @property
    def topic_znode_bytes(self) -> int:
        """The largest topic znode the admin tools create (1,000,000 bytes by default)."""
        return self.maxbuffer + 1 - _TOPIC_HEADROOM


_current = JuteLimits()


def configure(maxbuffer: int) -> JuteLimits:
    """Set the process's limits from the ensemble's ``jute.maxbuffer`` (at start)."""
    global _current
    if not MIN_JUTE_MAXBUFFER <= maxbuffer <= 2**31 - 1:
        raise ValueError(
            f"zookeeper.jute.maxbuffer must be {MIN_JUTE_MAXBUFFER}..{2**31 - 1}, got {maxbuffer}"
        )
    _current = JuteLimits(maxbuffer)
    return _current


def current() -> JuteLimits:
    return _current
