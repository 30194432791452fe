"""The job's own files in its checkpoint, through Hadoop's file system API, and its Delta app id.

Spark's checkpoint may live on any file system Hadoop has a client for (local, HDFS, S3A,
ABFS...), so the job's files next to it are read and written through the same API:
:func:`read_file` and :func:`write_once` (a temporary file renamed into place: a kill leaves
the file whole or absent, never empty). Two files use them:

* ``<query checkpoint>/rebalance-monitor-layout.json``, the stateful step's buckets
  (:func:`streaming.spark.buckets.checkpoint_keys`);
* ``<checkpoint_dir>/app-id`` (:data:`APP_ID_FILE`), the Delta ``txnAppId`` of the
  checkpoint (:func:`app_id`): a fresh UUID when the checkpoint is new, so a checkpoint
  recreated at the same path never reuses the id under which Delta recorded the old one's
  batches (it would skip every append until the new batch ids passed the old ones).

:func:`check_transactions` compares the id and the checkpoint's batches with what the tables'
Delta logs recorded, before the query starts: an append Delta would skip raises
:class:`CheckpointMismatchError`; tables last written by another checkpoint give a warning.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streaming.errors import RebalanceMonitorError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "APP_ID_FILE",
    "APP_ID_PREFIX",
    "CheckpointFileError",
    "CheckpointMismatchError",
    "TableTransactions",
    "app_id",
    "check_transactions",
    "has_run",
    "last_batch_id",
    "read_file",
    "table_transactions",
    "write_once",
]

#: The file in the job's checkpoint folder that keeps its Delta ``txnAppId``.
APP_ID_FILE = "app-id"
#: Every app id the job makes starts so (``<prefix><uuid>``), and so did the derived ones.
APP_ID_PREFIX = "rebalance-monitor:"


class CheckpointFileError(RebalanceMonitorError, ValueError):
    """A file of the job in its checkpoint that cannot be read or written; names the file."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


class CheckpointMismatchError(RebalanceMonitorError):
    """The checkpoint's app id and batches disagree with a table's Delta transactions: the
    job would append batches Delta skips (rows lost without a word). Names the table, the id,
    both batch ids and what to do."""

    def __init__(self, table: str, app: str, recorded: int, last_batch: int) -> None:
        planned = "no batch yet" if last_batch < 0 else f"batches up to {last_batch}"
        super().__init__(
            f"{table}: Delta recorded batch {recorded} for app id {app!r}, but the checkpoint "
            f"with this app id has {planned}: Delta would skip its appends up to batch "
            f"{recorded} and lose their rows. The checkpoint was reset but its "
            f"{APP_ID_FILE} kept (or copied); remove the whole checkpoint folder, or only its "
            f"{APP_ID_FILE} file, so the job makes a new app id."
        )
        self.table = table
        self.app_id = app
        self.recorded = recorded
        self.last_batch = last_batch


def _fs(spark: SparkSession, folder: str) -> tuple[Any, Any, Any]:
    """Hadoop's ``Path`` class, the folder's ``Path`` and its ``FileSystem``."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path_class = jvm.org.apache.hadoop.fs.Path
    path = path_class(folder)
    return path_class, path, path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def read_file(
    spark: SparkSession,
    folder: str,
    name: str,
    *,
    error: Callable[[str, str], CheckpointFileError] = CheckpointFileError,
) -> str | None:
    """The text of ``folder/name``, or None when there is no such file. A file Hadoop cannot
    read (a checksum that does not match, no permission) raises ``error`` naming it."""
    from py4j.protocol import Py4JJavaError

    path_class, path, fs = _fs(spark, folder)
    target = path_class(path, name)
    try:
        if not fs.exists(target):
            return None
        stream = fs.open(target)
        try:
            return bytes(stream.readAllBytes()).decode("utf-8", errors="replace")
        finally:
            stream.close()
    except Py4JJavaError as e:
        raise error(str(target), f"could not be read: {e.java_exception}") from None


def write_once(
    spark: SparkSession,
    folder: str,
    name: str,
    text: str,
    *,
    error: Callable[[str, str], CheckpointFileError] = CheckpointFileError,
) -> str:
    """Write ``text`` to ``folder/name`` whole (a temporary file renamed into place; the
    folder is made if missing) unless the file exists; returns what the file holds then (the
    other writer's text when one was faster). Raises ``error`` when it cannot be written."""
    path_class, path, fs = _fs(spark, folder)
    target = path_class(path, name)
    fs.mkdirs(path)
    partial = path_class(path, f".{name}.{uuid.uuid4()}")
    out = fs.create(partial, False)
    try:
        out.write(bytearray(text.encode()))
    finally:
        out.close()
    if fs.exists(target) or not fs.rename(partial, target):
        fs.delete(partial, False)
        there = read_file(spark, folder, name, error=error)
        if there is None:
            raise error(str(target), "could not be written")
        return there
    return text


def app_id(spark: SparkSession, checkpoint_dir: str, query_checkpoint: str) -> str:
    """The Delta ``txnAppId`` of the job's checkpoint ``checkpoint_dir``, as its
    :data:`APP_ID_FILE` records it. A checkpoint without the file gets a fresh
    ``rebalance-monitor:<uuid>``, written into it; except one on a remote file system that
    its query (``query_checkpoint``) already ran from: it keeps the id derived from its path
    (:func:`streaming.migration.derived_app_id`), now recorded in the file too, so the tables'
    transactions still match."""
    from streaming.migration import derived_app_id

    recorded = read_file(spark, checkpoint_dir, APP_ID_FILE)
    if recorded is None:
        derived = derived_app_id(checkpoint_dir, has_run(spark, query_checkpoint))
        fresh = derived if derived is not None else f"{APP_ID_PREFIX}{uuid.uuid4()}"
        recorded = write_once(spark, checkpoint_dir, APP_ID_FILE, f"{fresh}\n")
    text = recorded.strip()
    if not text:
        raise CheckpointFileError(f"{checkpoint_dir.rstrip('/')}/{APP_ID_FILE}", "is empty")
    return text


def has_run(spark: SparkSession, query_checkpoint: str) -> bool:
    """Whether a query ran from ``query_checkpoint``: Spark made its ``offsets`` log."""
    path_class, path, fs = _fs(spark, query_checkpoint)
    return bool(fs.exists(path_class(path, "offsets")))


def last_batch_id(spark: SparkSession, query_checkpoint: str) -> int:
    """The highest batch id in the query checkpoint's ``offsets`` log (the last batch Spark
    planned; a restart runs it again or the next one), -1 when it has none."""
    path_class, path, fs = _fs(spark, query_checkpoint)
    offsets = path_class(path, "offsets")
    if not fs.exists(offsets):
        return -1
    names = [status.getPath().getName() for status in fs.listStatus(offsets)]
    return max((int(n) for n in names if n.isdigit()), default=-1)


@dataclass(frozen=True)
class TableTransactions:
    """A Delta table's recorded ``txnAppId`` -> ``txnVersion`` (the last batch written)."""

    table: str
    versions: Mapping[str, int]


def table_transactions(
    spark: SparkSession, tables: Iterable[tuple[str, str]]
) -> list[TableTransactions]:
    """The Delta transactions of each ``(name, path)`` table (its latest snapshot)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog
    none = jvm.scala.Option.empty()
    out = []
    for name, path in tables:
        log = delta_log.forTable(spark._jsparkSession, path)
        snapshot = log.update(False, none, none)
        versions = jvm.scala.jdk.javaapi.CollectionConverters.asJava(snapshot.transactions())
        out.append(TableTransactions(name, {str(k): int(v) for k, v in versions.items()}))
    return out


def check_transactions(
    tables: Iterable[TableTransactions],
    app: str,
    last_batch: int,
    warn: Callable[[str], None],
) -> None:
    """Before the query starts: raise :class:`CheckpointMismatchError` when a table recorded a
    batch for ``app`` beyond the checkpoint's ``last_batch`` (Delta would skip the
    checkpoint's appends up to it). A new checkpoint (``last_batch`` -1) on tables another
    app id of the job wrote gets a line through ``warn``: the tables go on from this
    checkpoint's starting offsets, not from where the other stopped."""
    others: dict[str, tuple[int, str]] = {}
    for t in tables:
        recorded = t.versions.get(app)
        if recorded is not None and recorded > last_batch:
            raise CheckpointMismatchError(t.table, app, recorded, last_batch)
        for other, version in t.versions.items():
            newer = version > max(last_batch, others.get(other, (-1, ""))[0])
            if other != app and other.startswith(APP_ID_PREFIX) and newer:
                others[other] = (version, t.table)
    if last_batch < 0 and others:
        shown = ", ".join(
            f"{other} (batch {version} in {table})"
            for other, (version, table) in sorted(others.items())
        )
        warn(
            f"warning: a new checkpoint (app id {app}) on tables another checkpoint wrote: "
            f"{shown}. Rows continue from this checkpoint's starting offsets, not from where "
            "that one stopped (a gap or repeated rows between the two)."
        )
