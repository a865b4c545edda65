"""The benchmark scenarios other than the leadership cycle (``controller.bench.leadership``).

Each returns one result per size: the median and spread of its repetitions in seconds
(``median_s``), plus what the scenario learns on the way (ZooKeeper rates, event-queue times,
memory). Times are wall-clock (``time.time()``) differences between what the driver did and
what the controller or the brokers recorded, all on this host.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from controller.bench.cluster import (
    BenchCluster,
    BenchError,
    BrokerHost,
    ControllerProcess,
    wait_for,
)
from controller.bench.measure import (
    load_average,
    median_of,
    queue_time,
    summary,
    zk_activity,
    zk_rates,
)
from controller.bench.populate import Layout, batches, populate, topic_ops, write_all
from controller.zk import multiread
from controller.zk.fenced import DEFAULT_OPS_PER_MULTI
from controller.zk.port import Create, SetData

Result = dict[str, Any]
RSS_SETTLE_S = 4.0
Baseline = Mapping[str, float] | None


def result(scenario: str, partitions: int, samples: list[float], **extra: Any) -> Result:
    return {"scenario": scenario, "partitions": partitions, **summary(samples), **extra}


# -- zk_baseline ----------------------------------------------------------------------------


def zk_baseline(cluster: BenchCluster, nodes: int = 20_000, repeat: int = 3) -> Result:
    """Raw batched throughput of this ZooKeeper through the same client stack the controller
    uses (kazoo + ``KazooPort``): setData in pipelined multis of the controller's
    ``FencedWriter`` size, getData by multi-read of 1,000 paths, after one warm-up round."""
    population = cluster.population("baseline", 0)
    port = population.admin
    load = [load_average()]
    try:
        node_paths = [f"/n{i:07d}" for i in range(nodes)]
        payload = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}'
        start = time.monotonic()
        write_all(port, iter([Create(p, payload) for p in node_paths]))
        create_s = time.monotonic() - start
        writes: list[float] = []
        reads: list[float] = []
        multis = list(batches((SetData(p, payload) for p in node_paths), DEFAULT_OPS_PER_MULTI))
        for rep in range(repeat + 1):
            # The ops are built before the clock starts; the first round only warms up the
            # ZooKeeper JVM (a cold JIT halves its throughput) and is not counted.
            start = time.monotonic()
            port.multi_many(multis)
            write_s = time.monotonic() - start
            start = time.monotonic()
            read = port.get_many(node_paths)
            read_s = time.monotonic() - start
            if any(not r.ok for r in read):
                raise BenchError("baseline read failed")
            if rep:
                writes.append(nodes / write_s)
                reads.append(nodes / read_s)
        load.append(load_average())
        write_rate = sorted(writes)[len(writes) // 2]
        read_rate = sorted(reads)[len(reads) // 2]
        return {
            "scenario": "zk_baseline",
            "partitions": nodes,
            # The time to write, then read, every node once: what median_s means here.
            **summary([nodes / w + nodes / r for w, r in zip(writes, reads, strict=True)]),
            "create_ops_per_s": round(nodes / create_s),
            "write_ops_per_s": round(write_rate),
            "read_ops_per_s": round(read_rate),
            "write_samples": [round(w) for w in writes],
            "read_samples": [round(r) for r in reads],
            "multiread": multiread.kazoo_version(),
            "load": load,
        }
    finally:
        population.close()


# -- failover ---------------------------------------------------------------------------------


def failover(
    cluster: BenchCluster,
    partitions: int,
    repeat: int,
    baseline: Baseline = None,
    brokers: int = 5,
    log: Callable[[str], None] = print,
) -> Result:
    """N single-partition topics, RF 3; from the previous controller's session ending to the
    new controller's ``ready`` record, and to every broker's acknowledgement of the requests
    of the failover (UpdateMetadata and LeaderAndIsr)."""
    population = cluster.population(f"failover{partitions}", brokers)
    load = [load_average()]
    try:
        layout = Layout(partitions, brokers=brokers)
        start = time.monotonic()
        znodes = populate(population.admin, layout)
        populate_s = time.monotonic() - start
        log(f"failover {partitions}: populated {znodes} znodes in {populate_s:.1f}s")
        host = population.start_brokers()
        population.hold_controller()
        samples: list[float] = []
        records: list[dict[str, Any]] = []
        activity = {"read_ops": 0.0, "read_s": 0.0, "write_ops": 0.0, "write_s": 0.0}
        for rep in range(repeat):
            controller = population.start_controller(controller_id=rep + 1)
            standby_rss = controller.rss_bytes()
            before = controller.scrape()
            controller.mark_log()
            cpu = (controller.cpu_seconds(), host.cpu_seconds())
            t0 = population.release_controller()
            # The ready record, not the "failover complete" log line: the state-change log is
            # flushed at the end of the event, after that line is logged.
            ready: float = wait_for(
                partial(_ready_since, controller, t0),
                600,
                "the ready record of the failover",
                0.1,
            )
            epoch = _epoch_of(controller)
            wait_for(
                partial(_brokers_at_epoch, host, epoch),
                600,
                "every broker to hear from the new controller",
                0.1,
            )
            acked = host.wait_idle(quiet=0.5, timeout=600)["last_ack"]
            cpu = (controller.cpu_seconds() - cpu[0], host.cpu_seconds() - cpu[1])
            after = controller.scrape()
            rss_delivered = controller.rss_bytes()
            # Steady state: the daemon hands the failover's transient memory back to the OS
            # a couple of seconds after its requests are sent (controller.daemon).
            time.sleep(RSS_SETTLE_S)
            rss = controller.rss_bytes()
            for key, value in zk_activity(before, after).items():
                activity[key] += value
            delivered = max(ready, acked) - t0
            samples.append(delivered)
            records.append(
                {
                    "ready_s": ready - t0,
                    "delivered_s": delivered,
                    "rss_bytes": rss,
                    "rss_delivered_bytes": rss_delivered,
                    "controller_cpu_s": cpu[0],
                    "brokers_cpu_s": cpu[1],
                    "standby_rss_bytes": standby_rss,
                    "queue": queue_time(before, after),
                }
            )
            log(
                f"failover {partitions} #{rep + 1}: ready {ready - t0:.2f}s, delivered "
                f"{delivered:.2f}s, RSS {rss / 2**20:.0f} MiB"
            )
            controller.stop()
            population.hold_controller()
        load.append(load_average())
        rss_median = median_of(records, "rss_bytes") or 0
        standby = median_of(records, "standby_rss_bytes") or 0
        return result(
            "failover",
            partitions,
            samples,
            ready_median_s=median_of(records, "ready_s"),
            controller_cpu_median_s=median_of(records, "controller_cpu_s"),
            brokers_cpu_median_s=median_of(records, "brokers_cpu_s"),
            rss_bytes=int(rss_median),
            rss_at_delivery_bytes=int(median_of(records, "rss_delivered_bytes") or 0),
            rss_per_partition_bytes=round(rss_median / partitions),
            rss_above_standby_per_partition_bytes=round((rss_median - standby) / partitions),
            populate_znodes_per_s=round(znodes / populate_s),
            zookeeper=zk_rates(activity, baseline),
            event_queue=records[-1]["queue"],
            load=load,
        )
    finally:
        population.close()


def _logged(controller: ControllerProcess, message: str) -> bool:
    return any(r.get("event") == message for r in controller.log_records())


def _ready_since(controller: ControllerProcess, t0: float) -> float | None:
    """The ts of the controller's last ready record if it is from ``t0`` on, else None."""
    ready = controller.last_state_change("ready")
    return ready if ready is not None and ready >= t0 else None


def _brokers_at_epoch(host: BrokerHost, epoch: int) -> bool:
    return all(b["controller_epoch"] >= epoch for b in host.stats()["brokers"].values())


def _partitions_online(host: BrokerHost, expected: int) -> bool:
    return bool(host.stats()["partitions"] >= expected)


def _epoch_of(controller: ControllerProcess) -> int:
    for record in controller.log_records():
        if record.get("event") == "elected as the active controller":
            return int(record["epoch"])
    raise BenchError("the controller did not log its election")


# -- create_topics ----------------------------------------------------------------------------


def create_topics(
    cluster: BenchCluster,
    topics: int,
    repeat: int,
    baseline: Baseline = None,
    brokers: int = 5,
    log: Callable[[str], None] = print,
) -> Result:
    """T single-partition topics (RF 3, with ids) written at once in batched creates, as an
    admin tool would; until every new partition is online on its brokers."""
    population = cluster.population(f"create{topics}", brokers)
    load = [load_average()]
    try:
        host = population.start_brokers()
        controller = population.start_controller()
        wait_for(lambda: _logged(controller, "controller failover complete"), 120, "failover")
        samples: list[float] = []
        records: list[dict[str, Any]] = []
        activity = {"read_ops": 0.0, "read_s": 0.0, "write_ops": 0.0, "write_s": 0.0}
        for rep in range(repeat):
            layout = Layout(topics, brokers=brokers, first=rep * topics)
            expected = (rep + 1) * topics
            ops = list(topic_ops(layout, with_states=False, controller_epoch=0))
            before = controller.scrape()
            controller.mark_log()
            cpu = (controller.cpu_seconds(), host.cpu_seconds())
            t0 = time.time()
            write_all(population.admin, iter(ops))
            written = time.time()
            wait_for(
                partial(_partitions_online, host, expected),
                600,
                "the new partitions to be online on the brokers",
                0.1,
            )
            acked = host.wait_idle(quiet=0.5, timeout=600)["last_ack"]
            cpu = (controller.cpu_seconds() - cpu[0], host.cpu_seconds() - cpu[1])
            processed = controller.processed("TopicChange", t0) or acked
            after = controller.scrape()
            for key, value in zk_activity(before, after).items():
                activity[key] += value
            elapsed = max(acked, processed) - t0
            samples.append(elapsed)
            records.append(
                {
                    "write_s": written - t0,
                    "queue": queue_time(before, after),
                    "controller_cpu_s": cpu[0],
                    "brokers_cpu_s": cpu[1],
                }
            )
            log(f"create_topics {topics} #{rep + 1}: {elapsed:.2f}s")
        load.append(load_average())
        return result(
            "create_topics",
            topics,
            samples,
            admin_write_median_s=median_of(records, "write_s"),
            controller_cpu_median_s=median_of(records, "controller_cpu_s"),
            brokers_cpu_median_s=median_of(records, "brokers_cpu_s"),
            zookeeper=zk_rates(activity, baseline),
            event_queue=records[-1]["queue"],
            load=load,
        )
    finally:
        population.close()
