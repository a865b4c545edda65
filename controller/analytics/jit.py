"""HotSpot's optimizing compiler (C2), held back for the short jobs that end a run.

After the one big pass a run is a few dozen short Spark jobs over small data: the outputs and
the report. Each brings new generated code, and all of them run planning code (Catalyst,
Janino, the Parquet writer) that is only lukewarm. C2 compiles that code at a cost of seconds of
CPU, which on a two-core machine is more than it saves in jobs this short: during the outputs
of a 1M-record log the compiler threads used 9.7 of 22.6 CPU-seconds, the tasks 6.5
(docs/performance.md). So a process whose JVM ends with the job (the CLI) adds a HotSpot
compiler directive excluding C2 from then on; C1 still compiles, and code C2 compiled during
the pass stays compiled.

The directive goes in through the JVM's DiagnosticCommand MBean (what ``jcmd
Compiler.directives_add`` uses), so no JDK tools are needed. A method C2 was asked to compile
while excluded stays C1-only for the JVM's life: hence only for JVMs that end with the job.
Anything going wrong here costs speed, never the job: it is logged and the run goes on.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

EXCLUDE_C2 = '[{ match: "*.*", c2: { Exclude: true } }]\n'
_MBEAN = "com.sun.management:type=DiagnosticCommand"


def diagnostic_command(spark: SparkSession, operation: str, *args: str) -> str:
    """Run a HotSpot diagnostic command (``compilerDirectivesAdd`` etc.) in the driver's JVM.

    Through reflection on the ``MBeanServer`` interface: py4j cannot call the platform
    server's implementation class directly (it is not exported by its module)."""
    sc = spark.sparkContext
    jvm: Any = sc._jvm
    gateway: Any = sc._gateway
    lang = jvm.java.lang

    def array(cls: Any, items: list[Any]) -> Any:
        arr = gateway.new_array(cls, len(items))
        for i, item in enumerate(items):
            arr[i] = item
        return arr

    signature = array(lang.Class, [lang.Class.forName(n) for n in (
        "javax.management.ObjectName", "java.lang.String", "[Ljava.lang.Object;",
        "[Ljava.lang.String;",
    )])
    invoke = lang.Class.forName("javax.management.MBeanServer").getMethod("invoke", signature)
    server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
    call = array(lang.Object, [
        jvm.javax.management.ObjectName(_MBEAN),
        operation,
        array(lang.Object, [array(lang.String, list(args))]),
        array(lang.String, ["[Ljava.lang.String;"]),
    ])
    return str(invoke.invoke(server, call) or "")


@contextmanager
def c2_held_back(spark: SparkSession) -> Iterator[bool]:
    """Exclude C2 in the driver's JVM for the block; yields whether that took effect."""
    try:
        added = _add_directive(spark, EXCLUDE_C2)
    except Exception as exc:  # an optimisation: never fail the job
        log.warning("could not hold back the JIT's C2 compiler: %s", exc)
        added = False
    try:
        yield added
    finally:
        if added:
            try:
                diagnostic_command(spark, "compilerDirectivesRemove")
            except Exception as exc:
                log.warning("could not remove the compiler directive: %s", exc)


def _add_directive(spark: SparkSession, directive: str) -> bool:
    """The JVM reads directives from a file, at once: write one, add it, delete it."""
    fd, path = tempfile.mkstemp(prefix="zkc-jit-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(directive)
        answer = diagnostic_command(spark, "compilerDirectivesAdd", path).strip()
    finally:
        os.unlink(path)
    if not answer.startswith("1 "):  # "1 compiler directives added"
        log.warning("compiler directive not added: %s", answer)
        return False
    return True
