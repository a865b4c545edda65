"""The spark-submit package, submitted for real: `analyze package`'s zip and entry script.

The driver runs with the installed ``controller`` package hidden, so the job can only import
what the zip ships; the executors' Python is ``/bin/false``, so any Python worker (a Python
UDF, a Python RDD) would fail the job: executors on a cluster need no Python.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from controller.analytics.generate import generate

# Runs the driver script with every importer of an installed `controller` removed (the
# editable install's finder, or a site-packages copy), and reports where `controller` came from.
_HIDING_DRIVER = """\
import os, runpy, sys

sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
sys.path[:] = [p for p in sys.path
               if p.endswith(".zip") or not os.path.isdir(os.path.join(p, "controller"))]
sys.path_importer_cache.clear()
sys.argv = sys.argv[1:]  # spark-submit runs the driver as: python SCRIPT ARGS...
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    module = sys.modules.get("controller")
    print("controller imported from %s" % getattr(module, "__file__", None), flush=True)
"""


def test_the_package_runs_under_spark_submit_from_the_zip_alone(spark, tmp_path: Path) -> None:
    from pyspark.find_spark_home import _find_spark_home

    from controller.analytics.cli import main

    dist = tmp_path / "dist"
    assert main(["package", "--out", str(dist)]) == 0
    log = tmp_path / "in" / "state-change.log"
    generate(3_000, log, clusters=1, seed=11, days=1)

    hider = tmp_path / "hide.py"
    hider.write_text(_HIDING_DRIVER)
    driver = tmp_path / "driver-python"
    driver.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{hider}" "$@"\n')
    driver.chmod(0o755)
    spark_home = _find_spark_home()
    env = {
        **os.environ,
        "SPARK_HOME": spark_home,
        "PYSPARK_DRIVER_PYTHON": str(driver),
        "PYSPARK_PYTHON": "/bin/false",
        "PYTHONPATH": "",
    }
    out = tmp_path / "out"
    run = subprocess.run(
        [
            os.path.join(spark_home, "bin", "spark-submit"),
            "--master", "local[2]",
            "--driver-memory", "1g",
            "--conf", "spark.sql.shuffle.partitions=4",
            "--conf", "spark.ui.enabled=false",
            "--py-files", str(dist / "zk_controller_analytics.zip"),
            str(dist / "analyze_main.py"),
            "--input", str(log.parent), "--output", str(out),
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    assert f"controller imported from {dist / 'zk_controller_analytics.zip'}" in run.stdout
    assert "zk-controller analyze: 3,000 lines, 1 cluster(s)" in run.stdout, run.stdout
    assert (out / "report.html").is_file()
    assert (out / "unavailability_windows").is_dir()
    with zipfile.ZipFile(dist / "zk_controller_analytics.zip") as zf:
        assert "controller/analytics/job.py" in zf.namelist()
