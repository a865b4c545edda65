"""The errors of topic administration, raised by ``topics`` (writes) and ``topic_reads``."""

from __future__ import annotations

from controller.admin.assignment import AdminError
from controller.zk import paths


class TopicExistsError(AdminError):
    """Kafka's ``TopicExistsException``."""


class InvalidTopicError(AdminError, paths.InvalidTopicError):
    """An illegal topic name, or one colliding with an existing topic (``.`` vs ``_``)."""


class UnknownTopicError(AdminError):
    """Kafka's ``UnknownTopicOrPartitionException``."""


class TopicMarkedForDeletionError(AdminError):
    """The topic has a pending ``/admin/delete_topics/T`` request."""


class InvalidRequestError(AdminError):
    """Arguments that do not go together (e.g. both an assignment and a replication factor)."""


class ReassignmentInProgressError(AdminError):
    """Kafka's ``ReassignmentInProgressException``."""


class ConcurrentModificationError(AdminError):
    """ZooKeeper changed between our read and our write; nothing was written."""


class CorruptMetadataError(AdminError):
    """A znode the operation depends on could not be decoded."""
