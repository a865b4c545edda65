from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import ControllerHarness
from tests.unit.state_machines.kafka_fixture import BROKER, EPOCH


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    """Kafka's fixture: controller 5 at epoch 50, its context empty."""
    harness = ControllerHarness(controller_id=BROKER)
    harness.become_controller(epoch=EPOCH)
    yield harness
    harness.close()
