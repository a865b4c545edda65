"""zookeeper.jute.maxbuffer: one setting for the ensemble's request limit, from which the
codecs' read bound, the fenced writer's item bound and the admin tools' topic bound derive."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.admin import topics as admin_topics
from controller.config import load_config
from controller.zk import codecs, limits
from controller.zk.errors import MalformedZnodeError


@pytest.fixture(autouse=True)
def default_limits() -> Iterator[None]:
    yield
    limits.configure(limits.DEFAULT_JUTE_MAXBUFFER)


def _padded_topic(size: int) -> bytes:
    """A valid topic znode of ``size`` bytes (Kafka ignores fields it does not know)."""
    head = b'{"version":3,"partitions":{"0":[1]},"pad":"'
    return head + b"x" * (size - len(head) - 2) + b'"}'


def test_the_default_is_zookeepers_and_bounds_reads_at_one_mib() -> None:
    assert limits.current().maxbuffer == 0xFFFFF
    data = _padded_topic(1536 * 1024)
    with pytest.raises(MalformedZnodeError, match=r"1048576-byte znode limit.*jute\.maxbuffer"):
        codecs.decode_topic_assignment("t", data)


def test_a_raised_limit_reads_larger_znodes_and_still_bounds_them() -> None:
    limits.configure(4 * 1024 * 1024)
    data = _padded_topic(1536 * 1024)
    assert set(codecs.decode_topic_assignment("t", data).partitions) == {0}
    with pytest.raises(MalformedZnodeError, match="4194305-byte znode limit"):
        codecs.decode_topic_assignment("t", _padded_topic(5 * 1024 * 1024))


def test_the_admin_tools_topic_bound_follows_the_limit() -> None:
    assert admin_topics._max_topic_znode_bytes() == admin_topics.MAX_TOPIC_ZNODE_BYTES
    limits.configure(4 * 1024 * 1024)
    assert admin_topics._max_topic_znode_bytes() == 4 * 1024 * 1024 + 1 - 48_576
    with pytest.raises(admin_topics.InvalidPartitionsError, match="4145729-byte limit"):
        admin_topics._check_size_bound("t", 600_000, 3)
    admin_topics._check_size_bound("t", 300_000, 3)  # 3.3 MB at least: fits now


@pytest.mark.parametrize("value", [0, 65535, -1])
def test_a_limit_below_what_zookeeper_can_work_with_is_refused(value: int) -> None:
    with pytest.raises(ValueError, match=r"zookeeper\.jute\.maxbuffer must be"):
        limits.configure(value)
    assert limits.current().is_default


def test_the_setting_is_read_like_every_other() -> None:
    flags = {"zookeeper.connect": "127.0.0.1:2181", "controller.id": "0"}
    assert load_config(flags=flags, env={}).zookeeper_jute_maxbuffer == 0xFFFFF
    env = {"ZKC_ZOOKEEPER_JUTE_MAXBUFFER": "4194304"}
    assert load_config(flags=flags, env=env).zookeeper_jute_maxbuffer == 4194304
