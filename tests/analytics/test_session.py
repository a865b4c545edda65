"""The embedded session's settings reach the JVM it starts."""

from __future__ import annotations

from controller.analytics.session import _default_driver_memory, _local_cores


def test_local_session_settings(spark) -> None:
    # Set by get_session for a local master it launches (the fixture's own conf aside).
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    jvm = spark.sparkContext._jvm
    beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = {beans.get(i).getName() for i in range(beans.size())}
    assert names == {"PS Scavenge", "PS MarkSweep"}, names  # -XX:+UseParallelGC
    hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.com.sun.management.HotSpotDiagnosticMXBean._java_lang_class
    )
    # The fact pass's generated method is past the JIT's default size limit.
    assert hotspot.getVMOption("DontCompileHugeMethods").getValue() == "false"
    # The quiet console log is the CLI's: a session for library use keeps Spark's own.
    assert jvm.java.lang.System.getProperty("log4j2.configurationFile") is None


def test_local_core_counts() -> None:
    assert _local_cores("local[2]") == 2
    assert _local_cores("local[4,3]") == 4
    assert _local_cores("local") == 1
    assert _local_cores("local[*]") >= 1
    assert _default_driver_memory().endswith("g")
