"""Controller event handlers, one module per concern.

- ``failover``      controller election, failover, resignation, session expiry
- ``membership``    broker registration changes (new, dead, bounced, modified brokers)
- ``topics``        topic and partition creation, topic ids
- ``responses``     broker responses (log-dir failures via LeaderAndIsr responses)

Each handler class exposes ``handlers()``: a map from event type to the method handling it.
Handlers that add steps to the end of controller failover call
``ctl.election.add_failover_hook`` in their constructor; the order of ``all_handlers`` is
therefore Kafka's failover order (reassignments, then deletions, then pending preferred
elections, then the auto-rebalance schedule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.core.controller import Controller


def all_handlers(ctl: Controller) -> list[Any]:
    from controller.handlers.membership import BrokerMembership
    from controller.handlers.responses import BrokerResponses
    from controller.handlers.topics import Topics

    return [ctl.election, BrokerMembership(ctl), Topics(ctl), BrokerResponses(ctl)]
