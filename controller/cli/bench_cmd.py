"""``zk-controller bench SCENARIO``: the benchmark suite (``controller.bench``).

Builds its own cluster on 127.0.0.1 (a local ZooKeeper unless ``--zookeeper`` is given, the
simulated brokers, the controller as a separate process), runs each scenario at each size
``--repeat`` times, and prints a table (``--json``: one JSON object instead). Progress goes to
stderr. Sizes: topics for failover and create_topics, partitions led by the broker for
broker_failure, controlled_shutdown and preferred_election (whose cluster is 5x that).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCENARIOS = (
    "zk_baseline",
    "failover",
    "broker_failure",
    "controlled_shutdown",
    "preferred_election",
    "create_topics",
)
LEADERSHIP = ("broker_failure", "controlled_shutdown", "preferred_election")
DEFAULT_SIZES = {
    "failover": [10_000, 30_000, 100_000],
    "leadership": [2_000, 5_000, 10_000],
    "create_topics": [2_000, 5_000, 10_000],
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run the controller benchmark suite",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "scenarios",
        nargs="+",
        metavar="SCENARIO",
        choices=(*SCENARIOS, "all"),
        help=f"one or more of {', '.join(SCENARIOS)}, or all",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        nargs="+",
        metavar="N",
        help="sizes to run each scenario at (default: per scenario, e.g. failover "
        "10000 30000 100000)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per size (default 3)")
    parser.add_argument("--brokers", type=int, default=5, help="simulated brokers (default 5)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument(
        "--zookeeper", help="use this ZooKeeper (host:port) instead of starting a local one"
    )
    parser.add_argument("--zk-heap", default="3g", help="local ZooKeeper's -Xmx (default 3g)")
    parser.add_argument("--work-dir", help="where logs go (default: a temporary directory)")
    parser.add_argument(
        "--baseline-nodes", type=int, default=20_000, help="znodes for zk_baseline"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from controller.bench import report
    from controller.bench.cluster import BenchCluster
    from controller.bench.leadership import leadership
    from controller.bench.measure import load_average
    from controller.bench.scenarios import create_topics, failover, zk_baseline

    wanted = list(SCENARIOS) if "all" in args.scenarios else list(dict.fromkeys(args.scenarios))

    def log(message: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')} load {load_average():.2f}] {message}",
              file=sys.stderr, flush=True)  # fmt: skip

    def sizes(kind: str) -> list[int]:
        return list(args.partitions) if args.partitions else DEFAULT_SIZES[kind]

    work_dir = Path(args.work_dir or tempfile.mkdtemp(prefix="zkc-bench-"))
    log(f"work dir {work_dir}")
    cluster = BenchCluster(work_dir, zookeeper=args.zookeeper, zk_heap=args.zk_heap)
    results: list[dict[str, Any]] = []
    started = time.time()
    try:
        info = report.machine(cluster.hosts)
        # The baseline is always measured: every scenario reports its rates against it.
        base = zk_baseline(cluster, nodes=args.baseline_nodes, repeat=args.repeat)
        log(f"zk_baseline: write {base['write_ops_per_s']}/s read {base['read_ops_per_s']}/s")
        if "zk_baseline" in wanted:
            results.append(base)
        if "failover" in wanted:
            for n in sizes("failover"):
                results.append(failover(cluster, n, args.repeat, base, args.brokers, log))
        leadership_wanted = [s for s in LEADERSHIP if s in wanted]
        if leadership_wanted:
            for n in sizes("leadership"):
                population = cluster.population(f"leadership{n}", args.brokers)
                try:
                    for row in leadership(population, n, args.repeat, base, log):
                        if row["scenario"] in leadership_wanted:
                            results.append(row)
                finally:
                    population.close()
        if "create_topics" in wanted:
            for n in sizes("create_topics"):
                results.append(create_topics(cluster, n, args.repeat, base, args.brokers, log))
    finally:
        cluster.close()
    document = {
        "machine": info,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(time.time() - started, 1),
        "repeat": args.repeat,
        "brokers": args.brokers,
        "work_dir": str(work_dir),
        "results": results,
    }
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(
            f"machine: {info['cpu']}, {info['cores']} cores, {info['memory_mib']} MiB; "
            f"Python {info['python']}, kazoo {info['kazoo']}, ZooKeeper {info['zookeeper']}"
        )
        print(report.table(results))
    return 0
