"""Building the SparkSession: pinned jars from the local Maven cache, Delta, sane defaults.

``make setup`` resolves the Kafka source and Delta jars (``jvm/spark/pom.xml``) into
``.cache/jars/spark`` and drops what the pyspark wheel already ships, so a session needs no
network: the explicit file list goes to ``spark.jars``. (``spark.driver.extraClassPath`` is
avoided on purpose: it would put those jars ahead of Spark's own.)

The Kafka source reads ``__consumer_offsets`` only with the consumer-based offset reader,
see :mod:`streaming.spark.sources`; :data:`REQUIRED_CONF` sets it.

Local mode also gets :data:`LOCAL_FS_CONF`: without Hadoop's native library (the pyspark wheel
has none) Hadoop's local file system starts a ``chmod`` process for every file it creates and
a ``readlink`` for every rename, a dozen per micro-batch for the checkpoint and state
files. ``jvm/localfs`` (built by ``make setup`` into
``.cache/jars/localfs``, on the driver's class path) does the same with ``java.nio``. A
cluster keeps Hadoop's (its checkpoints are not on ``file:`` paths).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from streaming.errors import EXIT_FAILED, RebalanceMonitorError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parents[2]
DEFAULT_JARS_DIR = REPO / ".cache" / "jars" / "spark"
#: ``jvm/localfs``, next to the Spark jars.
LOCAL_FS_JAR = Path("localfs") / "rebalance-monitor-localfs.jar"
#: ``jvm/udf``, the commit lane's decoder (:mod:`streaming.spark.commits`), next to them too.
UDF_JAR = Path("udf") / "rebalance-monitor-udf.jar"
#: Local mode: Hadoop's local file system without a process per file (module docstring),
#: and Python workers forked with the job's modules already imported
#: (:mod:`streaming.spark.daemon`).
LOCAL_FS_CONF: dict[str, str] = {
    "spark.hadoop.fs.file.impl": "rebalancemonitor.hadoop.NioLocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "rebalancemonitor.hadoop.NioLocalFs",
    "spark.python.daemon.module": "streaming.spark.daemon",
}

#: Settings the job needs to be correct; user settings cannot turn them off.
REQUIRED_CONF: dict[str, str] = {
    # The default admin-based offset reader drops internal topics (isInternal filter), so a
    # subscription to __consumer_offsets would silently read nothing.
    "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "true",
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

#: Defaults for a small local run; every one can be overridden.
DEFAULT_CONF: dict[str, str] = {
    # the stateful step's partitions (fixed when a checkpoint is created): each commits its
    # RocksDB store every micro-batch, so a small machine wants few; on a cluster, set it
    # to the executors' cores
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    # the job prints a line per micro-batch; Spark's progress bar would garble them
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # local mode: driver and executors share this heap; a steady backlog of many groups and
    # a rebalance storm's backlog each fit in one micro-batch, and a bigger heap is only
    # filled, not faster; RocksDB's memory (off-heap) is capped apart
    "spark.driver.memory": "1g",
    # the micro-batch's rows are cached (Sinks.events_batch) in column batches of this many
    # rows; at Spark's 10,000 a column batch of rebalance rows (several KB each) takes tens
    # of MB of heap to build, too much for a 1g heap in a rebalance storm
    "spark.sql.inMemoryColumnarStorage.batchSize": "1000",
    "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
    "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "256",
    # Python workers and the JVM connect to each other over local sockets; the default 15 s
    # to accept or connect fails queries on a busy machine ("Python worker failed to connect
    # back", CANNOT_OPEN_SOCKET).
    "spark.python.authenticate.socketTimeout": "120s",
    # Spark keeps the classes it generates for 100 plan fragments by default, fewer than a
    # micro-batch plans (the query, six Delta appends, the driver's reads): each micro-batch
    # would compile its classes again (Janino, then the JIT)
    "spark.sql.codegen.cache.maxEntries": "2000",
    # Spark keeps a Python worker daemon, with its own idle workers, per set of worker
    # environment variables; the map's runner (the decode) sets SPARK_SIMPLIFIED_TRACEBACK
    # and the stateful step's does not, so with this on an executor runs two daemons and
    # twice the workers. Off, a failing UDF's traceback keeps pyspark's own frames.
    "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled": "false",
    # fair scheduling between pools: the tables' maintenance runs its jobs in a pool of its
    # own (streaming.sinks.maintenance.POOL), so a micro-batch's tasks take the next free
    # core instead of queueing behind a whole OPTIMIZE; the job's own jobs share the
    # default pool, first come first served as before
    "spark.scheduler.mode": "FAIR",
    # the streaming checkpoint keeps this many micro-batches (offsets, commits, state store
    # versions; Spark's default 100); a restart needs only the last one
    "spark.sql.streaming.minBatchesToRetain": "10",
}


#: Local mode: the one JVM (driver and executors) with the serial collector: on a small
#: machine it keeps less beside the heap than G1, at the same speed. The heap grows only as
#: far as the live objects need (10-20 % free after a full collection, shrunk back to that)
#: and the young generation is a sixteenth of ``spark.driver.memory``
#: (:func:`local_jvm_conf`): a smaller resident JVM, for more collections in a backlog
#: (docs/operations.md, Tuning). Class metadata and compiled code are capped: Spark loads
#: generated classes for as long as it runs, and without a cap the metaspace has no bound
#: (a full collection unloads the classes of evicted plans as it nears the cap). A user's
#: own ``spark.driver.extraJavaOptions`` replaces all of it.
LOCAL_JVM_OPTIONS = (
    "-XX:+UseSerialGC",
    "-XX:MinHeapFreeRatio=10",
    "-XX:MaxHeapFreeRatio=20",
    "-XX:MaxMetaspaceSize=512m",
    "-XX:ReservedCodeCacheSize=240m",
)
YOUNG_GENERATION_SHARE = 16

_MEMORY = re.compile(r"(\d+)([kmgtp]?)b?", re.IGNORECASE)
_MIB = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}


def local_jvm_conf(driver_memory: str) -> dict[str, str]:
    """The local JVM's options for a heap of ``driver_memory`` (Spark's spelling: ``1g``,
    ``1024m``, a bare number in MiB): :data:`LOCAL_JVM_OPTIONS` and a young generation of
    a :data:`YOUNG_GENERATION_SHARE`-th of the heap, at least 16 MiB (none when the size
    does not parse: Spark itself then says what is wrong with it)."""
    options = list(LOCAL_JVM_OPTIONS)
    size = _MEMORY.fullmatch(driver_memory.strip())
    if size:
        heap_mib = int(size.group(1)) * _MIB[size.group(2).lower()]
        options.append(f"-Xmn{max(16, int(heap_mib // YOUNG_GENERATION_SHARE))}m")
    return {"spark.driver.extraJavaOptions": " ".join(options)}


#: Local mode: the driver, its RPC endpoint and the block manager listen on the loopback
#: address only (Spark's default is the host's network address, with authentication off).
#: ``build_session`` also sets ``SPARK_LOCAL_IP`` for the JVM it launches: the UI (off by
#: default; ``spark.ui.enabled=true`` to have it) binds to that, not to a setting. A user's
#: own value of any of these wins.
LOCAL_BIND_CONF: dict[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}
LOOPBACK = "127.0.0.1"


def is_local_master(master: str | None) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``."""
    return bool(master) and (master == "local" or str(master).startswith("local["))


class SparkSetupError(RebalanceMonitorError, RuntimeError):
    """The Spark environment is incomplete (e.g. jars not resolved: run ``make setup``)."""

    exit_status = EXIT_FAILED


def spark_jars(jars_dir: Path = DEFAULT_JARS_DIR) -> list[Path]:
    """The jar files the job adds to Spark (the resolved Kafka source and Delta jars, and
    the commit lane's ``jvm/udf``), or :class:`SparkSetupError` when one is missing."""
    jars = sorted(jars_dir.glob("*.jar"))
    names = " ".join(j.name for j in jars)
    for needed in ("spark-sql-kafka-0-10", "delta-spark"):
        if needed not in names:
            raise SparkSetupError(
                f"{needed} jar not found in {jars_dir}: run `make setup` to resolve the Spark jars"
            )
    udf = jars_dir.parent / UDF_JAR
    if not udf.is_file():
        raise SparkSetupError(f"{udf} not found: run `make setup` to build it")
    return [*jars, udf]


def local_fs_conf(
    master: str | None, conf: Mapping[str, str], jars_dir: Path = DEFAULT_JARS_DIR
) -> dict[str, str]:
    """What a ``local`` master adds to the user's ``conf`` (nothing for other masters): the
    :data:`LOCAL_FS_CONF`, :func:`local_jvm_conf` (for the user's ``spark.driver.memory``,
    else the default's) and :data:`LOCAL_BIND_CONF` settings the user did not set, and the
    driver's class path with the jar in front of the user's own."""
    if not is_local_master(master):
        return {}
    jar = jars_dir.parent / LOCAL_FS_JAR
    if not jar.is_file():
        raise SparkSetupError(f"{jar} not found: run `make setup` to build it")
    extra = conf.get("spark.driver.extraClassPath")
    jvm = local_jvm_conf(conf.get("spark.driver.memory", DEFAULT_CONF["spark.driver.memory"]))
    added = {
        key: value
        for key, value in {**LOCAL_FS_CONF, **jvm, **LOCAL_BIND_CONF}.items()
        if key not in conf
    }
    added["spark.driver.extraClassPath"] = f"{jar}{os.pathsep}{extra}" if extra else str(jar)
    return added


def build_session(
    app_name: str = "rebalance-monitor",
    *,
    master: str | None = "local[*]",
    conf: Mapping[str, str] | None = None,
    jars_dir: Path = DEFAULT_JARS_DIR,
    log_file: Path | None = None,
) -> SparkSession:
    """A SparkSession with the pinned jars, Delta and the job's required settings.

    ``master=None`` leaves the master to ``spark-submit``. ``conf`` overrides the defaults
    (not the required settings). ``log_file``: where the JVM's output goes when this call
    launches it (:func:`launch_jvm`), instead of this process's terminal.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # the JVM (local mode: launched from here) with fewer glibc malloc arenas: less native
    # memory beside the heap
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    if is_local_master(master):
        # the UI's address (Spark's WebUI reads SPARK_LOCAL_IP, else 0.0.0.0); LOCAL_BIND_CONF
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    user = dict(conf or {})
    settings = {**DEFAULT_CONF, **user, **local_fs_conf(master, user, jars_dir), **REQUIRED_CONF}
    settings["spark.jars"] = ",".join(str(j) for j in spark_jars(jars_dir))
    for key, value in settings.items():
        builder = builder.config(key, value)
    if log_file is not None and master:
        launch_jvm({"spark.app.name": app_name, "spark.master": master, **settings}, log_file)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    _quiet(session, QUIET_LOGGERS)
    return session


#: Spark loggers whose WARN lines are the job's normal course: the stateful step reads each
#: group's state from its bucket's MapState, and the state server warns once per group it
#: has not seen yet ("Map state ... doesn't contain key").
QUIET_LOGGERS = (
    "org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer",
)


def _quiet(session: SparkSession, loggers: tuple[str, ...]) -> None:
    """Only ERROR lines of ``loggers`` (log4j, the driver's JVM: in local mode, the executor's
    too)."""
    jvm = session.sparkContext._jvm
    assert jvm is not None  # set while the session's context lives
    level = jvm.org.apache.logging.log4j.Level.ERROR
    for name in loggers:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)


def launch_jvm(settings: Mapping[str, str], log_file: Path) -> bool:
    """Launch the driver's JVM (as ``getOrCreate`` would, with ``settings`` as its
    ``--conf``) with its stdout and stderr appended to ``log_file``; False when this process
    already has one (a session was built before, or pyspark runs under ``spark-submit``).

    Everything the JVM prints goes there instead of the terminal: log4j's console appender
    (Spark's WARN lines), Spark's start-up notes and the Python workers' output, which the
    JVM copies to its own stderr (the ``TransformWithStateInPandas`` worker's banner lines).
    The commands that start Spark for a person (``demo``, ``run``, ``audit``) use it."""
    import subprocess

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return False
    conf = SparkConf(loadDefaults=False)
    conf.setAll(list(settings.items()))
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as out:  # the JVM keeps its own descriptor
        gateway = launch_gateway(  # type: ignore[no-untyped-call]
            conf, popen_kwargs={"stdout": out, "stderr": subprocess.STDOUT}
        )
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)
    return True
