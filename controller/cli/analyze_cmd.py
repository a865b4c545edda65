"""``zk-controller analyze``: availability analytics over state-change logs, on Spark.

The commands live in ``controller.analytics.cli`` so the spark-submit zip carries them; this
module only hangs them under the main command. PySpark is imported only when a command runs,
so ``zk-controller --help`` works without the ``spark`` extra.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    from controller.analytics.cli import build_parser

    parser = subparsers.add_parser(
        "analyze",
        help="availability analytics over state-change logs (PySpark)",
        description="Availability analytics over controller state-change logs, on Spark: "
        "local[*] by default, any cluster with --master or spark-submit.",
    )
    build_parser(parser)
