"""Producer-id blocks for brokers (reference §2.13, KIP-730's ``AllocateProducerIds``).

A broker hands producer ids to idempotent and transactional producers from blocks of 1,000
that the controller allocates in ``/latest_producer_id_block``. Blocks must never overlap,
or two producers could share an id, so:

- the allocation is a compare-and-set on the znode's version, retried on a lost race (an older
  broker may still allocate by itself during an upgrade), and fenced by the controller epoch;
- a znode that cannot be decoded stops allocation (UNKNOWN_SERVER_ERROR, logged with the
  path): any block guessed past it could repeat ids. Repair it and brokers' retries succeed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import ApiError, Errors
from controller.core.events import AllocateProducerIds, NotControllerError
from controller.core.features import ProducerIdsExhaustedError, next_producer_id_block
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.producer_ids")

# Lost compare-and-set races before giving up (the broker retries the request). Kafka loops
# without a bound; a bound keeps one contended request from holding the event thread.
MAX_ATTEMPTS = 20


class ProducerIdAllocation:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def handlers(self) -> dict[type, Any]:
        return {AllocateProducerIds: self.process_allocate_producer_ids}

    def process_allocate_producer_ids(self, event: AllocateProducerIds) -> None:
        try:
            event.reply.set_result(self.allocate(event.broker_id, event.broker_epoch))
        except (ApiError, NotControllerError) as exc:
            event.reply.set_exception(exc)

    def allocate(self, broker_id: int, broker_epoch: int) -> codecs.ProducerIdBlock:
        ctl = self.ctl
        if not ctl.is_active:
            raise NotControllerError(ctl.active_controller_id)
        epochs = ctl.context.live_broker_id_and_epochs()
        if broker_id not in epochs:
            log.warning("ignoring AllocateProducerIds from an unknown broker", broker_id=broker_id)
            raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"broker {broker_id} is not live")
        if epochs[broker_id] != broker_epoch:
            log.warning(
                "ignoring AllocateProducerIds with a stale broker epoch",
                broker_id=broker_id,
                broker_epoch=broker_epoch,
                current_epoch=epochs[broker_id],
            )
            raise ApiError(
                Errors.STALE_BROKER_EPOCH,
                f"broker {broker_id}'s epoch is {epochs[broker_id]}, not {broker_epoch}",
            )
        gateway = ctl.gateway
        for _ in range(MAX_ATTEMPTS):
            try:
                current, version = gateway.get_producer_id_block()
            except MalformedZnodeError as exc:
                log.error(
                    "cannot allocate producer ids: the last block is unreadable",
                    path=exc.path,
                    error=exc.problem,
                )
                raise ApiError(Errors.UNKNOWN_SERVER_ERROR, str(exc)) from None
            try:
                block = next_producer_id_block(current, broker_id)
            except ProducerIdsExhaustedError as exc:
                log.error("cannot allocate producer ids", error=str(exc))
                raise ApiError(Errors.UNKNOWN_SERVER_ERROR, str(exc)) from None
            if gateway.write_producer_id_block(block, version, ctl.context.epoch_zk_version):
                log.info(
                    "allocated a producer id block",
                    broker_id=broker_id,
                    block_start=block.block_start,
                    block_end=block.block_end,
                    zk_version=version + 1,
                )
                return block
        raise ApiError(
            Errors.UNKNOWN_SERVER_ERROR,
            f"{paths.LATEST_PRODUCER_ID_BLOCK} kept changing under {MAX_ATTEMPTS} attempts",
        )
