"""The Delta sink: six tables under one base path, written once per micro-batch.

:class:`DeltaSink` keeps each table of :mod:`streaming.tables` at
``<base_path>/<table>``, partitioned by ``date``. :meth:`DeltaSink.ensure_tables` creates the
missing ones, adds the nullable columns a newer version of a table has (an upgrade: older
rows read them as null), and refuses a table whose columns differ otherwise;
:meth:`DeltaSink.write_batch` appends one micro-batch's rows from ``foreachBatch``.

Idempotency: every append carries ``txnAppId=<app_id>`` and ``txnVersion=<batch_id>``. Delta
records the pair in the table's log in the same commit as the data, and skips a later append
whose version is not above the recorded one for that app id. A micro-batch that Spark
re-runs after a crash (same checkpoint, same batch id) is therefore written at most once
per table, and a table the crash kept from being written is written on the re-run: no row
is lost or duplicated. Tables are independent Delta logs, so each remembers its own last
version.

A test can hold the sink before or after a table's append, or after the whole batch
(:mod:`streaming.sinks.pause`, off unless its environment variable is set), to kill the job
exactly there.

**A new checkpoint needs a new app id.** Batch ids restart at 0 with a fresh checkpoint; with
the old app id, Delta would silently skip every batch up to the old last version. The job's
app id is a UUID kept in the checkpoint (:func:`streaming.spark.checkpoint.app_id`), checked
against the tables' transactions before the query starts.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from streaming import tables as t
from streaming.sinks import TableSchemaError
from streaming.sinks.pause import Pauser
from streaming.tables import UnknownTableError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from streaming.sinks.maintenance import Settings

__all__ = ["DeltaSink", "added_columns", "set_properties", "table_properties"]

#: How many of a table's newest commits are searched for a batch's append.
_HISTORY_SCAN = 10


def table_properties(table: str, settings: Settings | None = None) -> dict[str, str]:
    """The Delta table properties ``table`` is given: its statistics columns
    (:data:`streaming.tables.STATS_COLUMNS`) and the retention and checkpoint interval
    of :func:`streaming.sinks.maintenance.table_properties` (``settings``' or the defaults)."""
    from streaming.sinks import maintenance

    properties = maintenance.table_properties(settings or maintenance.Settings())
    columns = t.STATS_COLUMNS.get(table)
    if columns is not None:
        properties["delta.dataSkippingStatsColumns"] = ",".join(columns)
    return properties


def set_properties(
    spark: SparkSession, path: str, table: str, settings: Settings | None = None
) -> dict[str, str]:
    """Give the existing table at ``path`` the properties it lacks or has other values of
    (:func:`table_properties`; one commit, none when it has them all); returns those set."""
    from delta.tables import DeltaTable

    wanted = table_properties(table, settings)
    detail = DeltaTable.forPath(spark, path).detail().collect()[0]
    missing = {k: v for k, v in wanted.items() if detail["properties"].get(k) != v}
    if missing:
        where = path.replace("`", "``")
        settings_sql = ", ".join(f"'{k}' = '{v}'" for k, v in missing.items())
        spark.sql(f"ALTER TABLE delta.`{where}` SET TBLPROPERTIES ({settings_sql})")
    return missing


def _shape(schema: StructType) -> list[tuple[str, str]]:
    """Column names and types, without nullability or comments (what must match)."""
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def added_columns(actual: StructType, expected: StructType, prefix: str = "") -> list[str] | None:
    """The ``ALTER TABLE ... ADD COLUMNS`` clauses that turn a table of ``actual`` columns into
    ``expected``: nullable fields ``expected`` has and ``actual`` lacks, at their place
    (``AFTER``), inside structs and arrays of structs too (``expected.element.x``). None when
    adding columns cannot get there (a type changed, a column went, the order differs, or a
    missing field is required)."""
    from pyspark.sql.types import ArrayType, StructType

    clauses: list[str] = []
    have = list(actual.fields)
    previous: str | None = None
    for field in expected.fields:
        if have and have[0].name == field.name:
            old, new = have.pop(0).dataType, field.dataType
            if old.simpleString() != new.simpleString():
                if isinstance(old, ArrayType) and isinstance(new, ArrayType):
                    old, new, inner = old.elementType, new.elementType, f"{field.name}.element."
                else:
                    inner = f"{field.name}."
                if not (isinstance(old, StructType) and isinstance(new, StructType)):
                    return None
                nested = added_columns(old, new, prefix + inner)
                if nested is None:
                    return None
                clauses += nested
        elif field.nullable:
            comment = field.metadata.get("comment", "").replace("'", "\\'")
            clauses.append(
                f"{prefix}{field.name} {field.dataType.simpleString()}"
                + (f" COMMENT '{comment}'" if comment else "")
                + (f" AFTER {previous}" if previous else " FIRST")
            )
        else:
            return None
        previous = field.name
    return None if have else clauses


class DeltaSink:
    """Appends tracker rows and bad records to the six Delta tables (module docstring).

    ``app_id`` must be unique per streaming checkpoint (see the module docstring);
    ``settings``: the retention the tables' properties say (default: maintenance's defaults).
    """

    def __init__(
        self, spark: SparkSession, base_path: str, app_id: str, settings: Settings | None = None
    ) -> None:
        if not app_id:
            raise ValueError("app_id must not be empty")
        self.spark = spark
        self.settings = settings
        self.base_path = base_path.rstrip("/")
        self.app_id = app_id
        self.pauser = Pauser.from_env()
        #: Told each append's rows (table, Delta's count); the exporter's ``rows_written``.
        self.on_rows_written: Callable[[str, int], None] | None = None

    def path(self, table: str) -> str:
        """Where ``table`` lives."""
        if table not in t.SCHEMAS:
            raise UnknownTableError(table)
        return f"{self.base_path}/{table}"

    def ensure_tables(self) -> None:
        """Create every missing table (partitioned by ``date``, columns commented); raise
        :class:`TableSchemaError` if an existing one has other columns or partitioning.

        The tables side by side, as their appends (:meth:`_append_all`): each is its own
        Delta log, and a new table costs a commit and a snapshot (two to four small Spark
        jobs, mostly the driver's round trips), which one after the other would add up at
        every fresh start."""
        self._side_by_side(self._ensure, [(table,) for table in t.TABLE_NAMES])

    def _ensure(self, table: str) -> None:
        from delta.tables import DeltaTable

        path = self.path(table)
        expected = t.schema(table)
        properties = table_properties(table, self.settings)
        if DeltaTable.isDeltaTable(self.spark, path):
            self._check(table, path, expected)
            return
        builder = (
            DeltaTable.createIfNotExists(self.spark)
            .location(path)
            .addColumns(expected)
            .partitionedBy(t.PARTITION_COLUMN)
            .comment(f"rebalance-monitor {table} (docs/tables.md)")
        )
        for key, value in properties.items():
            builder = builder.property(key, value)
        builder.execute()
        # load the new table's snapshot now (Delta caches it): the first micro-batch's
        # appends would otherwise each reconstruct it (a Spark job each)
        DeltaTable.forPath(self.spark, path).detail().collect()

    def _check(self, table: str, path: str, expected: StructType) -> None:
        """Refuse a table of other columns or partitioning; give a table created before
        its new nullable columns and its properties (one commit each, once)."""
        from delta.tables import DeltaTable

        where = path.replace("`", "``")
        actual = self.spark.read.format("delta").load(path).schema
        if _shape(actual) != _shape(expected):
            added = added_columns(actual, expected)
            if not added:
                raise TableSchemaError(
                    f"{path}: columns {_shape(actual)} differ from the {table} schema "
                    f"{_shape(expected)} (docs/tables.md)"
                )
            self.spark.sql(f"ALTER TABLE delta.`{where}` ADD COLUMNS ({', '.join(added)})")
        detail = DeltaTable.forPath(self.spark, path).detail().collect()[0]
        if list(detail["partitionColumns"]) != [t.PARTITION_COLUMN]:
            raise TableSchemaError(
                f"{path}: partitioned by {list(detail['partitionColumns'])}, "
                f"expected [{t.PARTITION_COLUMN!r}]"
            )
        set_properties(self.spark, path, table, self.settings)

    def write_batch(self, batch_id: int, frames: Mapping[str, DataFrame]) -> list[str]:
        """Append one micro-batch: for each table, a DataFrame of its rows
        (:func:`streaming.sinks.micro_batch.table_frames`), the tables side by side. Returns
        the tables appended to; a replayed batch returns the same but Delta writes
        nothing."""
        if batch_id < 0:
            raise ValueError("batch_id must be >= 0")
        appends = [
            (table, frame.select(*t.schema(table).fieldNames())) for table, frame in frames.items()
        ]
        self._append_all(appends, batch_id)
        self.pauser.reach("after-batch", batch_id)
        return list(frames)

    def _append_all(self, appends: Sequence[tuple[str, DataFrame]], batch_id: int) -> None:
        """The appends side by side: each table is its own Delta log, and most of an append's
        time is its commit's round trips on the driver, not the executors' work."""
        self._side_by_side(self._append, [(table, frame, batch_id) for table, frame in appends])

    @staticmethod
    def _side_by_side(fn: Callable[..., None], calls: Sequence[tuple[Any, ...]]) -> None:
        """``fn(*args)`` for each ``args`` of ``calls`` (one table each), in a thread each;
        every call is waited for, and the first failure is raised."""
        if len(calls) <= 1:
            for args in calls:
                fn(*args)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(calls), thread_name_prefix="delta-table") as pool:
            futures = [pool.submit(fn, *args) for args in calls]
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            raise errors[0]  # type: ignore[misc]

    def _append(self, table: str, frame: DataFrame, batch_id: int) -> None:
        self.pauser.reach("before-append", batch_id, table)
        # this attempt's own mark: a replayed batch's earlier commit carries another, so a
        # skipped append finds none (no clock compared with the storage's)
        marker = f"{self.app_id}:{batch_id}:{uuid.uuid4().hex}"
        (
            frame.write.format("delta")
            .mode("append")
            .option("txnAppId", self.app_id)
            .option("txnVersion", str(batch_id))
            .option("userMetadata", marker)
            .save(self.path(table))
        )
        if self.on_rows_written is not None:
            rows = self._rows_written(table, marker)
            if rows is not None:
                self.on_rows_written(table, rows)
        self.pauser.reach("after-append", batch_id, table)

    def _rows_written(self, table: str, marker: str) -> int | None:
        """Delta's count of the rows of an append: the commit whose ``userMetadata`` is
        ``marker`` (the attempt's own), among the table's newest :data:`_HISTORY_SCAN` (table
        maintenance may commit beside the job); None when the append was skipped (a
        replayed batch Delta had committed before)."""
        from pyspark.sql import functions as F

        where = self.path(table).replace("`", "``")
        ours = (
            self.spark.sql(f"DESCRIBE HISTORY delta.`{where}` LIMIT {_HISTORY_SCAN}")
            .where(F.col("userMetadata") == marker)
            .select("operationMetrics")
            .first()
        )
        if ours is None:
            return None
        return int((ours["operationMetrics"] or {}).get("numOutputRows", 0))
