"""The leadership cycle: broker_failure, preferred_election and controlled_shutdown of one broker.

The population has ``5 L`` single-partition topics (RF 3) on 5 brokers, so broker 0 is the
preferred leader of exactly L of them. One repetition:

1. **broker_failure**: kill broker 0 (stop serving, end its session); until every partition it
   led has its new leader acknowledged by the brokers (the controller writes a leader to
   ZooKeeper before it sends it); ``processed`` also covers the rest of the BrokerChange (the
   dead replicas leave every ISR) and the brokers' acknowledgements of it;
2. restart broker 0 (new broker epoch) and put it back in the ISRs the way a leader does
   (AlterPartition from each leader, through the controller);
3. **preferred_election** of the L partitions (the ElectLeaders RPC, as
   ``kafka-leader-election.sh`` does); until the RPC returned and the brokers acknowledged
   the new leaders;
4. **controlled_shutdown** of broker 0 leading L partitions: the ControlledShutdown RPC, repeated
   as a broker does, until it returns 0 remaining partitions;
5. untimed reset: kill and restart broker 0, back into the ISRs, preferred election.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from controller.admin.controller_client import ControllerClient
from controller.api.errors import Errors
from controller.api.v1 import admin_pb2, common_pb2, controller_pb2
from controller.bench.cluster import BenchError, BrokerHost, ControllerProcess, Population, wait_for
from controller.bench.measure import load_average, median_of, queue_time, zk_activity, zk_rates
from controller.bench.populate import Layout, populate
from controller.bench.scenarios import Baseline, Result, _logged, result
from controller.core.model import TopicPartition
from controller.zk import codecs, paths

VICTIM = 0
SCENARIOS = ("broker_failure", "preferred_election", "controlled_shutdown")


class Cycle:
    def __init__(self, population: Population, layout: Layout, log: Callable[[str], None]):
        self.population = population
        self.layout = layout
        self.log = log
        self.led = layout.partitions_led_by(VICTIM)
        self.hosting = [
            TopicPartition(layout.topic(i), 0)
            for i in range(layout.topics)
            if VICTIM in layout.replicas(i, 0)
        ]
        self.host: BrokerHost = population.start_brokers()
        self.controller: ControllerProcess = population.start_controller()
        self.client = ControllerClient(population.admin, timeout_s=600)
        wait_for(lambda: _logged(self.controller, "controller failover complete"), 600, "failover")
        self.host.wait_idle(quiet=0.5, timeout=600)
        self.samples: dict[str, list[float]] = {s: [] for s in SCENARIOS}
        self.records: dict[str, list[dict[str, Any]]] = {s: [] for s in SCENARIOS}
        self.activity = {
            s: {"read_ops": 0.0, "read_s": 0.0, "write_ops": 0.0, "write_s": 0.0}
            for s in SCENARIOS
        }

    # -- steps -------------------------------------------------------------------------------

    def _measured(self, scenario: str, run: Callable[[], dict[str, Any]]) -> None:
        before = self.controller.scrape()
        self.controller.mark_log()
        cpu = (self.controller.cpu_seconds(), self.host.cpu_seconds())
        record = run()
        record["controller_cpu_s"] = self.controller.cpu_seconds() - cpu[0]
        record["brokers_cpu_s"] = self.host.cpu_seconds() - cpu[1]
        after = self.controller.scrape()
        for key, value in zk_activity(before, after).items():
            self.activity[scenario][key] += value
        record["queue"] = queue_time(before, after)
        self.samples[scenario].append(record["elapsed_s"])
        self.records[scenario].append(record)
        self.log(f"{scenario} {len(self.led)} #{len(self.samples[scenario])}: "
                 f"{record['elapsed_s']:.2f}s")  # fmt: skip

    def broker_failure(self) -> dict[str, Any]:
        """Until the new leaders are acknowledged (elapsed_s: written to ZooKeeper before
        being sent); processed_s also covers the rest of the BrokerChange: the dead replicas
        leave every ISR (ZooKeeper writes, LeaderAndIsr to the other replicas)."""
        self.host.expect(VICTIM, 0)
        t0 = self.host.kill(VICTIM)
        moved = wait_for(lambda: self.host.reached(VICTIM, 0), 600, "new leaders acked", 0.1)
        processed = wait_for(
            lambda: self.controller.processed("BrokerChange", t0), 600, "BrokerChange", 0.1
        )
        acked = self.host.wait_idle(quiet=0.5, timeout=600)["last_ack"]
        still_led = self._zk_led_by(VICTIM, self.led)
        if still_led:
            raise BenchError(f"{still_led} partitions still led by the dead broker in ZooKeeper")
        return {"elapsed_s": moved - t0, "processed_s": max(processed, acked) - t0}

    def restart(self) -> None:
        t0 = time.time()
        self.host.start(VICTIM)
        wait_for(lambda: self.controller.processed("BrokerChange", t0), 600, "BrokerChange", 0.1)
        self.host.wait_idle(quiet=0.3, timeout=600)
        self.restore_isr()

    def preferred_election(self) -> dict[str, Any]:
        request = admin_pb2.ElectLeadersRequest(
            election_type=admin_pb2.ELECTION_TYPE_PREFERRED,
            partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in self.led],
            timeout_ms=600_000,
        )
        self.host.expect(VICTIM, len(self.led))
        t0 = time.time()
        response = self.client.admin("ElectLeaders", request)
        returned = time.time()
        failed = [r for r in response.results if r.error_code != Errors.NONE]
        if response.error_code != Errors.NONE or failed:
            first = failed[0].error_message if failed else response.error_message
            raise BenchError(f"preferred election failed for {len(failed)} partitions: {first}")
        moved = wait_for(
            lambda: self.host.reached(VICTIM, len(self.led)), 600, "preferred leaders acked", 0.1
        )
        self.host.wait_idle(quiet=0.3, timeout=600)
        return {"elapsed_s": max(returned, moved) - t0, "rpc_s": returned - t0}

    def controlled_shutdown(self) -> dict[str, Any]:
        epoch = int(self.host.stats()["brokers"][str(VICTIM)]["epoch"])
        request = controller_pb2.ControlledShutdownRequest(broker_id=VICTIM, broker_epoch=epoch)
        t0 = time.time()
        attempts = 0
        while True:
            attempts += 1
            response = self.client.controller("ControlledShutdown", request)
            if response.error_code != Errors.NONE:
                raise BenchError(f"controlled shutdown failed: error {response.error_code}")
            if not response.remaining_partitions:
                break
            if attempts >= 3:  # Kafka's controlled.shutdown.max.retries
                raise BenchError(f"{len(response.remaining_partitions)} partitions remain led")
        returned = time.time()
        acked = self.host.wait_idle(quiet=0.5, timeout=600)["last_ack"]
        return {"elapsed_s": returned - t0, "acked_s": max(acked, returned) - t0,
                "attempts": attempts}  # fmt: skip

    def reset(self) -> None:
        """Broker 0 back as the leader of its L partitions (untimed)."""
        t0 = self.host.kill(VICTIM)
        wait_for(lambda: self.controller.processed("BrokerChange", t0), 600, "BrokerChange", 0.1)
        self.host.wait_idle(quiet=0.3, timeout=600)
        self.restart()
        self.preferred_election()

    # -- helpers -----------------------------------------------------------------------------

    def _states(self, partitions: Sequence[TopicPartition]) -> list[tuple[TopicPartition, Any]]:
        reads = self.population.admin.get_many(
            [paths.partition_state_path(t, p) for t, p in partitions]
        )
        return [
            (tp, codecs.decode_partition_state(r.data, r.stat.version, r.path))
            for tp, r in zip(partitions, reads, strict=True)
            if r.ok and r.stat is not None
        ]

    def _zk_led_by(self, broker: int, partitions: Sequence[TopicPartition]) -> int:
        return sum(1 for _, s in self._states(partitions) if s.leader_and_isr.leader == broker)

    def restore_isr(self) -> None:
        """Every replica of broker 0 back in its ISR, through AlterPartition from each leader
        (what a leader does once the follower has caught up)."""
        epochs = {int(b): int(s["epoch"]) for b, s in self.host.stats()["brokers"].items()}
        by_leader: dict[int, list[tuple[TopicPartition, Any]]] = {}
        for tp, state in self._states(self.hosting):
            lai = state.leader_and_isr
            if lai.leader >= 0 and VICTIM not in lai.isr:
                by_leader.setdefault(lai.leader, []).append((tp, lai))
        for leader, items in sorted(by_leader.items()):
            request = controller_pb2.AlterPartitionRequest(
                broker_id=leader, broker_epoch=epochs[leader]
            )
            for tp, lai in items:
                topic = request.topics.add(topic_name=tp.topic)
                isr = [*lai.isr, VICTIM]
                topic.partitions.add(
                    partition_index=tp.partition,
                    leader_epoch=lai.leader_epoch,
                    new_isr_with_epochs=[
                        controller_pb2.BrokerState(broker_id=b, broker_epoch=epochs[b])
                        for b in isr
                    ],
                    leader_recovery_state=int(lai.leader_recovery_state),
                    partition_epoch=lai.partition_epoch,
                )
            response = self.client.controller("AlterPartition", request)
            bad = [
                p.error_code
                for t in response.topics
                for p in t.partitions
                if p.error_code != Errors.NONE
            ]
            if response.error_code != Errors.NONE or bad:
                raise BenchError(f"AlterPartition failed: {response.error_code} {bad[:5]}")
        self.host.wait_idle(quiet=0.3, timeout=600)


def leadership(
    population: Population,
    led: int,
    repeat: int,
    baseline: Baseline = None,
    log: Callable[[str], None] = print,
) -> list[Result]:
    """Run the cycle ``repeat`` times; one result per scenario."""
    load = [load_average()]
    layout = Layout(led * population.broker_count, brokers=population.broker_count)
    start = time.monotonic()
    znodes = populate(population.admin, layout)
    log(f"leadership {led}: populated {znodes} znodes in {time.monotonic() - start:.1f}s")
    cycle = Cycle(population, layout, log)
    try:
        for _ in range(repeat):
            cycle._measured("broker_failure", cycle.broker_failure)
            cycle.restart()
            cycle._measured("preferred_election", cycle.preferred_election)
            cycle._measured("controlled_shutdown", cycle.controlled_shutdown)
            cycle.reset()
    finally:
        cycle.client.close()
    load.append(load_average())
    out = []
    for scenario in SCENARIOS:
        records = cycle.records[scenario]
        extra: dict[str, Any] = {}
        for key in ("processed_s", "rpc_s", "acked_s", "controller_cpu_s", "brokers_cpu_s"):
            value = median_of(records, key)
            if value is not None:
                extra[f"{key[:-2]}_median_s"] = value
        out.append(
            result(
                scenario,
                led,
                cycle.samples[scenario],
                cluster_partitions=layout.partition_count,
                **extra,
                zookeeper=zk_rates(cycle.activity[scenario], baseline),
                event_queue=records[-1]["queue"],
                load=load,
            )
        )
    return out
