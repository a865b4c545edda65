"""``ZkGateway``'s cluster-wide znodes: ``/feature`` and ``/latest_producer_id_block``
(reference §1.4, §2.12, §2.13).

A mixin of ``ZkGateway``. Kafka writes both without the controller-epoch check; here both are
fenced like every other controller write, so a deposed controller can neither change the
finalized features nor hand out a producer-id block. Both are also conditional on the
version read, so a concurrent writer (an older broker allocating producer ids itself, an
operator's tool) is detected instead of overwritten.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from controller.zk import codecs, paths
from controller.zk.errors import (
    BadVersionError,
    MalformedZnodeError,
    NodeExistsError,
    NoNodeError,
    ZkError,
)
from controller.zk.port import Create, SetData

if TYPE_CHECKING:
    from controller.zk.fenced import FencedWriter

#: The version passed to create a znode that does not exist yet.
ABSENT = -1


class ClusterZnodes:
    """What it needs from ``ZkGateway`` is declared here; ``ZkGateway`` provides it."""

    _writer: FencedWriter
    get_data: Callable[..., tuple[bytes, int, int] | None]

    def _write_conditionally(
        self, path: str, data: bytes, expected_version: int, epoch_zk_version: int
    ) -> int:
        """Create (``expected_version`` ABSENT) or set at that version, fenced; the new
        version. Raises ``BadVersionError``/``NodeExistsError``/``NoNodeError`` when someone
        else wrote first, ``ControllerMovedError`` when this controller was deposed."""
        if expected_version == ABSENT:
            op: Create | SetData = Create(path, data)
        else:
            op = SetData(path, data, expected_version)
        result = self._writer.run_one([op], epoch_zk_version)
        if isinstance(result, ZkError):
            raise result
        stat = result[0].stat
        return 0 if stat is None else stat.version

    # -- /feature ------------------------------------------------------------------------

    def get_feature_znode(self, *, watch: bool = False) -> tuple[codecs.FeatureZNode, int] | None:
        """``/feature`` and its version (the features' epoch), or None when absent.
        Raises ``MalformedZnodeError`` for content that cannot be decoded. ``watch``: arm
        the registered change handler."""
        got = self.get_data(paths.FEATURE, watch=watch)
        if got is None:
            return None
        return codecs.decode_feature_znode(got[0]), got[1]

    def write_feature_znode(
        self, node: codecs.FeatureZNode, expected_version: int, epoch_zk_version: int
    ) -> int:
        """Create (``expected_version`` ABSENT) or replace ``/feature``; its new version."""
        data = codecs.encode_feature_znode(node)
        return self._write_conditionally(paths.FEATURE, data, expected_version, epoch_zk_version)

    # -- /latest_producer_id_block -------------------------------------------------------

    def get_producer_id_block(self) -> tuple[codecs.ProducerIdBlock | None, int]:
        """The last allocated block (None: none yet) and the znode's version (ABSENT when the
        znode itself is missing). Raises ``MalformedZnodeError`` for unreadable content."""
        got = self.get_data(paths.LATEST_PRODUCER_ID_BLOCK, watch=False)
        if got is None:
            return None, ABSENT
        data, version, _czxid = got
        if not data and version > 0:
            # Created empty, it means "none yet"; emptied after a block was written, starting
            # over at 0 would hand out producer ids already in use (Kafka fails to parse it).
            raise MalformedZnodeError(
                paths.LATEST_PRODUCER_ID_BLOCK,
                f"empty at version {version}, after a block was allocated: the last block is "
                "lost, so no block is safe to hand out",
            )
        return codecs.decode_producer_id_block(data), version

    def write_producer_id_block(
        self, block: codecs.ProducerIdBlock, expected_version: int, epoch_zk_version: int
    ) -> bool:
        """Claim ``block`` if ``/latest_producer_id_block`` is still at ``expected_version``;
        False when another writer got there first (re-read and try the next block)."""
        data = codecs.encode_producer_id_block(block)
        try:
            self._write_conditionally(
                paths.LATEST_PRODUCER_ID_BLOCK, data, expected_version, epoch_zk_version
            )
        except (BadVersionError, NodeExistsError, NoNodeError):
            return False
        return True
