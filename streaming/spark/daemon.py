"""The Python worker daemon of local sessions: Spark's own, with the job's modules imported
before it forks the workers.

Spark starts one daemon per executor (``python -m <spark.python.daemon.module>``) and forks a
worker from it for each Python task that finds no idle one. Every forked worker of the stock
daemon imports pyarrow, pandas and the job's modules on its first task, seconds of CPU paid
again by each new worker, so it lands in the first micro-batches (the job's start-up).
Importing them once in the daemon gives every forked worker a warm copy. That includes what
a task imports on first use: the state API's client and its protobuf messages, pyarrow's
``acero`` (``group_by``), the what-if assignors (imported by name).

**Spark's zips off the path.** Spark puts ``pyspark.zip`` and ``py4j-*-src.zip`` first on
the workers' ``PYTHONPATH``. Python cannot cache bytecode inside a zip, so the daemon
compiles pyspark's modules from source on every start, and every task's
``setup_spark_files`` (``importlib.invalidate_caches()``) re-reads both zips' directories.
In local mode those zips are copies of the pip-installed pyspark the driver runs (the same
``SPARK_HOME``), so :func:`without_spark_zips` drops them when that install is on the path,
and pyspark loads from it, with its cached bytecode.

Spark also puts the jar that holds its own ``PythonUtils`` (``pyspark/jars/spark-core_*.jar``:
Java classes, no Python) on the workers' path, for clusters whose pyspark lives inside Spark's
assembly. Every importer of a zip on the path re-reads its directory when a task's
``setup_spark_files`` invalidates the import caches: for that 15 MB jar, three importers
(the jar, ``org``, ``google``) in each new worker. It goes off the path with the zips,
under the same condition.

:mod:`streaming.spark.session` sets ``spark.python.daemon.module`` to this module for local
masters only: a cluster's executors need not have the ``streaming`` package installed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def without_spark_zips(path: list[str]) -> list[str]:
    """``path`` without the zips of ``<install>/pyspark/python/lib`` and the jars of
    ``<install>/pyspark/jars``, when an entry of ``path`` holds that same ``pyspark``
    installed as a package (else ``path`` unchanged)."""
    zips = [
        p
        for p in path
        if (p.endswith(".zip") and Path(p).parent.parent.name == "python")
        or (p.endswith(".jar") and Path(p).parent.name == "jars")
    ]
    installs = {str(_install_of(z)) for z in zips if _install_of(z).name == "pyspark"}
    on_path = {
        str(Path(p) / "pyspark")
        for p in path
        if p and not p.endswith(".zip") and (Path(p) / "pyspark" / "__init__.py").is_file()
    }
    if not installs or not installs <= on_path:
        return path
    ours = {z for z in zips if str(_install_of(z)) in installs}
    return [p for p in path if p not in ours]


def _install_of(entry: str) -> Path:
    """The ``pyspark`` folder a zip (``python/lib/x.zip``) or jar (``jars/x.jar``) is in."""
    return Path(entry).parents[2] if entry.endswith(".zip") else Path(entry).parents[1]


_dropped = tuple(set(sys.path) - set(without_spark_zips(sys.path)))
sys.path[:] = without_spark_zips(sys.path)
for _entry in [k for k in sys.path_importer_cache if k.startswith(_dropped)]:
    del sys.path_importer_cache[_entry]  # the archive's importers, its folders' too

import pandas  # noqa: E402, F401
import pyarrow  # noqa: E402
import pyarrow.acero  # noqa: E402  (pyarrow's group_by: the source stats)
import pyarrow.compute  # noqa: E402, F401
import pyspark.sql.streaming.proto.StateMessage_pb2  # noqa: E402  (the state API's)
import pyspark.sql.streaming.stateful_processor_api_client  # noqa: E402
import pyspark.testing.utils  # noqa: E402, F401  (the state API's first value: have_numpy)
from pyspark import daemon  # noqa: E402

import assign_core.assignors.registry  # noqa: E402
import streaming.spark.decode  # noqa: E402
import streaming.spark.stateful  # noqa: E402
import streaming.tracking.reducer  # noqa: E402, F401

for _strategy in assign_core.assignors.registry.STRATEGIES:  # the what-if assignors
    assign_core.assignors.registry.get_assignor(_strategy)

if __name__ == "__main__":
    # a process group of its own: a terminal's Ctrl-C goes to the job's foreground group, and
    # Spark's forked workers take SIGINT (pyspark restores Python's handler in each), which
    # failed the task in flight; the driver stops the query, and the JVM ends the workers
    os.setpgid(0, 0)
    daemon.manager()
