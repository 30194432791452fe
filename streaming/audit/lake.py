"""The delta-rs side of ``rebalance-monitor audit``: every subcommand but ``sql``, without Spark.

A local Spark session takes seconds to start; these questions touch a few columns of a few
files, so :class:`LakeAudit` reads the Delta tables with delta-rs (``deltalake``) into
Arrow and answers in this process. The semantics are those of :mod:`streaming.audit.queries`
(numbered there), and both engines shape their answer with :mod:`streaming.audit.results`:
the same tables give the same result (``tests/audit/test_lake.py`` compares them).

How a read stays small (:meth:`LakeAudit.scan`):

* delta-rs lists only the files of the snapshot whose ``date`` partition is in the range and
  whose ``group_id`` (and ``cluster``) statistics can hold the group asked for
  (``file_pruning_predicate``): a table compacted and Z-ordered by ``group_id`` keeps each
  group in a few files per day;
* Arrow reads only the columns (nested fields included) a subcommand needs, and skips the
  row groups whose Parquet statistics rule the row filter out.

A table whose protocol needs a reader feature the Arrow dataset does not support (deletion
vectors, column mapping) raises :class:`LakeUnsupportedError`; the command then runs on
Spark (:mod:`streaming.audit.cli`).
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streaming.audit import AuditError, MissingTableError, TimeTravelError
from streaming.audit import results as shape
from streaming.audit.advise import CostRow
from streaming.audit.render import Result
from streaming.audit.results import GROUP, ORDER, Timeline
from streaming.audit.times import format_ms

__all__ = ["LakeAudit", "LakeUnsupportedError", "Scan"]

REBALANCE_EVENTS = "rebalance_events"  # streaming.tables (which imports pyspark)
MEMBER_ASSIGNMENTS = "member_assignments"
GROUP_METRICS = "group_metrics"
PARTITION_COLUMN = "date"

_DESC = "descending"
_ASC = "ascending"


class LakeUnsupportedError(AuditError):
    """delta-rs cannot read these tables through Arrow (a reader feature it lacks)."""


@dataclass(frozen=True)
class Scan:
    """One read: the table, the files the snapshot holds, the files read after pruning,
    and the rows the filters kept."""

    table: str
    files_total: int
    files_read: int
    rows: int


def _date(ts_ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.UTC).date()


def _size(column: str) -> pc.Expression:
    return pc.list_value_length(pc.field(column))


def _divergent(pairs: Iterable[tuple[str, bool | None]] | None) -> list[str]:
    """``array_sort(map_keys(map_filter(divergent, v)))``: the strategies marked divergent."""
    return sorted(k for k, v in pairs or () if v)


def _dedupe(table: pa.Table, key: str = "event_id") -> pa.Table:
    """One row per ``key`` (the first read): two app ids may have written the same events."""
    if table.num_rows < 2:
        return table
    index = table.append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    first = index.group_by(key, use_threads=False).aggregate([("__row", "min")])
    if first.num_rows == table.num_rows:
        return table
    return table.take(pc.sort_indices(first["__row_min"]))


def _latest(table: pa.Table, order: Sequence[str]) -> pa.Table:
    """Per (cluster, group_id), the row last in ``order`` (``row_number`` over it, desc)."""
    if table.num_rows == 0:
        return table
    keys = [(c, _ASC) for c in GROUP] + [(c, _DESC) for c in order]
    table = table.take(pc.sort_indices(table, sort_keys=keys))
    cluster, group = table["cluster"], table["group_id"]
    changed = pc.or_(pc.not_equal(cluster[1:], cluster[:-1]), pc.not_equal(group[1:], group[:-1]))
    first = pa.concat_arrays([pa.array([True]), changed.combine_chunks()])
    return table.filter(first)


class LakeAudit:
    """The Delta tables under ``base_path`` (``<base>/<table>``), read-only, with delta-rs.

    ``cluster``: restrict every query to that cluster label (None: every cluster).
    ``limit``: the most rows a result keeps (None: all); a longer one gets a note.
    ``storage_options``: delta-rs's options for an object store URI (credentials...).
    """

    def __init__(
        self,
        base_path: str,
        *,
        cluster: str | None = None,
        limit: int | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.base_path = base_path.rstrip("/") or "/"
        self.cluster = cluster
        self.limit = limit
        self.storage_options = dict(storage_options or {})
        #: Every read so far (tests and the benchmark look at the pruning).
        self.scans: list[Scan] = []

    # -- reading ---------------------------------------------------------------------------

    def path(self, table: str) -> str:
        return f"{self.base_path}/{table}"

    def table(self, name: str, *, as_of_ms: int | None = None) -> Any:
        """The ``deltalake.DeltaTable`` ``name``: its latest version, or with ``as_of_ms``
        the last version committed at or before it (:class:`TimeTravelError` when there is
        none)."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            table = DeltaTable(self.path(name), storage_options=self.storage_options or None)
        except TableNotFoundError:
            raise MissingTableError(
                f"--delta-path: no Delta table {name} at {self.path(name)} "
                "(has the job written there? --delta-path names the tables' base)"
            ) from None
        if as_of_ms is not None:
            self._travel(table, name, as_of_ms)
        return table

    def _travel(self, table: Any, name: str, at_ms: int) -> None:
        """Load the last version of ``table`` committed at or before ``at_ms`` (delta-rs
        binary-searches the commits' times: a few commits read, not the whole log)."""
        from deltalake.exceptions import DeltaError

        at = dt.datetime.fromtimestamp(at_ms / 1000, tz=dt.UTC)
        try:
            table.load_as_version(at)
            committed = self._commit_ms(name, table.version())
        except (DeltaError, OSError, ValueError) as e:
            raise TimeTravelError(
                f"--at: cannot read {name} as of {format_ms(at_ms)}: {e}".splitlines()[0]
            ) from None
        if committed > at_ms:  # delta-rs settles on the first version when T precedes it
            raise TimeTravelError(
                f"--at: {format_ms(at_ms)} is before the first version of {name} "
                f"(version {table.version()}, written {format_ms(committed)}); use a later "
                "--at, or drop --as-recorded to read the table as it is now"
            )

    def _commit_ms(self, name: str, version: int) -> int:
        """When ``version`` of ``name`` was committed: its commit file's ``commitInfo``
        timestamp (one small file read)."""
        import json

        filesystem, root = _arrow_fs(self.path(name))
        with filesystem.open_input_stream(f"{root}/_delta_log/{version:020d}.json") as f:
            for line in f.read().decode("utf-8").splitlines():
                action = json.loads(line)
                if "commitInfo" in action:
                    return int(action["commitInfo"]["timestamp"])
        raise ValueError(f"no commitInfo in version {version}")

    def scan(
        self,
        name: str,
        columns: Mapping[str, pc.Expression],
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
        upto_ms: int | None = None,
        groups: Sequence[str] | None = None,
        dates: Sequence[dt.date] | None = None,
        where: pc.Expression | None = None,
        as_of_ms: int | None = None,
    ) -> pa.Table:
        """``columns`` (name -> expression) of the rows of ``name`` with ``since_ms <= event
        time < until_ms`` (``<= upto_ms``), of ``groups``, ``dates`` and the cluster, and
        ``where``; only the files whose ``date`` and statistics can hold such rows are read."""
        table = self.table(name, as_of_ms=as_of_ms)
        files: list[tuple[str, str, Any]] = []
        rows: list[pc.Expression] = []
        ts = pc.field("event_ts_ms")
        if since_ms is not None:
            files.append((PARTITION_COLUMN, ">=", _date(since_ms)))
            rows.append(ts >= since_ms)
        if until_ms is not None:  # exclusive: an until at midnight ends the day before
            files.append((PARTITION_COLUMN, "<=", _date(until_ms - 1)))
            rows.append(ts < until_ms)
        if upto_ms is not None:
            files.append((PARTITION_COLUMN, "<=", _date(upto_ms)))
            rows.append(ts <= upto_ms)
        if groups is not None:
            unique = sorted(set(groups))
            if len(unique) == 1:
                files.append(("group_id", "=", unique[0]))
                rows.append(pc.field("group_id") == unique[0])
            else:
                files.append(("group_id", "in", unique))
                rows.append(pc.field("group_id").isin(unique))
        if dates is not None:  # a partition column: the files are exactly the rows
            files.append((PARTITION_COLUMN, "in", sorted(set(dates))))
        if self.cluster is not None:
            files.append(("cluster", "=", self.cluster))
            rows.append(pc.field("cluster") == self.cluster)
        if where is not None:
            rows.append(where)
        from deltalake.exceptions import DeltaProtocolError

        try:
            dataset = table.to_pyarrow_dataset(
                file_pruning_predicate=files or None, filesystem=self._filesystem(name)
            )
        except DeltaProtocolError as e:
            raise LakeUnsupportedError(f"{name}: {e}") from None
        out = dataset.to_table(
            columns=dict(columns), filter=functools.reduce(operator.and_, rows) if rows else None
        )
        total = len(table.file_uris())
        self.scans.append(Scan(name, total, len(dataset.files), out.num_rows))
        return out

    def _filesystem(self, name: str) -> Any:
        """Arrow's own file system rooted at the table (local, S3, GCS...: native reads on
        Arrow's threads); None, for delta-rs's (through Python), when Arrow has none for the
        URI or the table needs ``storage_options``."""
        from pyarrow import fs

        if self.storage_options:
            return None
        try:
            filesystem, root = _arrow_fs(self.path(name))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        return fs.SubTreeFileSystem(root, filesystem)

    def _found(self, rows: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
        return shape.limited(rows, self.limit, notes)

    # -- 1. history ------------------------------------------------------------------------

    def history(self, group: str, *, since_ms: int | None, until_ms: int | None) -> Result:
        """The group's rebalances in order (``queries``, 1)."""
        f = pc.field
        columns = {
            "event_id": f("event_id"),
            **{c: f(c) for c in ORDER},
            "cluster": f("cluster"),
            "generation_before": f("generation_before"),
            "members_before": _size("members_before"),
            "members_after": _size("members_after"),
            "cause": f("cause"),
            "moved": f("churn", "moved_partitions"),
            "revoked": f("churn", "revoked_partitions"),
            "skew": f("actual_skew", "spread_partitions"),
            "imbalance": f("actual_skew", "imbalance_ratio"),
            "strategy": f("strategy"),
            "divergent": f("divergent"),
        }
        table = self.scan(
            REBALANCE_EVENTS, columns, since_ms=since_ms, until_ms=until_ms, groups=[group]
        )
        table = _dedupe(table)
        table = table.sort_by([(c, _ASC) for c in (*ORDER, "cluster")])
        notes: list[str] = []
        found = self._found(table.to_pylist(), notes)
        for r in found:
            r["divergent"] = _divergent(r["divergent"])
        return shape.history_result(found, notes, group=group, cluster=self.cluster)

    def timeline(self, group: str, *, since_ms: int | None, until_ms: int | None) -> Timeline:
        """Per rebalance of the group in the range: what ``history --plot`` draws."""
        f = pc.field
        columns = {
            "event_id": f("event_id"),
            **{c: f(c) for c in ORDER},
            "cluster": f("cluster"),
            "actual": f("actual"),
            "members": f("members_after"),
            "moved": f("churn", "moved_partitions"),
            "revoked": f("churn", "revoked_partitions"),
            "cause": f("cause"),
        }
        table = self.scan(
            REBALANCE_EVENTS, columns, since_ms=since_ms, until_ms=until_ms, groups=[group]
        )
        table = _dedupe(table).sort_by([(c, _ASC) for c in ORDER])
        found = table.to_pylist()
        for r in found:
            r["counts"] = {member: len(tps or ()) for member, tps in r["actual"] or ()}
        return shape.timeline_of(found, group=group)

    # -- 2. storms -------------------------------------------------------------------------

    def storms(
        self,
        *,
        since_ms: int | None,
        until_ms: int | None,
        min_rebalances: int,
        window_ms: int,
    ) -> Result:
        """Groups with at least ``min_rebalances`` rebalances in a window of ``window_ms``
        (``queries``, 2)."""
        f = pc.field
        columns = {
            "event_id": f("event_id"),
            **{c: f(c) for c in GROUP},
            **{c: f(c) for c in ORDER},
            "paused": _size("paused_partitions"),
            "duration_ms": f("duration_ms"),
            "assignment_duration_ms": f("assignment_duration_ms"),
        }
        table = self.scan(
            REBALANCE_EVENTS,
            columns,
            since_ms=since_ms,
            until_ms=until_ms,
            where=f("is_rebalance"),
        )
        table = _dedupe(table).sort_by([(c, _ASC) for c in (*GROUP, *ORDER)])
        by_group: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in table.to_pylist():
            by_group.setdefault((r["cluster"], r["group_id"]), []).append(r)
        storms = [
            storm
            for (cluster, group), events in by_group.items()
            for storm in _storms(cluster, group, events, min_rebalances, window_ms)
        ]
        storms.sort(
            key=lambda s: (
                -s["paused_partition_seconds"],
                -s["rebalances"],
                s["start_ms"],
                s["cluster"],
                s["group_id"],
            )
        )
        notes: list[str] = []
        return shape.storms_result(
            self._found(storms, notes),
            notes,
            cluster=self.cluster,
            min_rebalances=min_rebalances,
            window_ms=window_ms,
        )

    # -- 7. advise -------------------------------------------------------------------------

    def cost_rows(
        self, group: str, *, since_ms: int | None, until_ms: int | None
    ) -> tuple[list[CostRow], str | None]:
        """The ``group_metrics`` rows of the group's rebalances in the range (``queries``,
        7), and the group protocol of its latest rebalance."""
        f = pc.field
        events = self.scan(
            REBALANCE_EVENTS,
            {
                "rebalance_event_id": f("event_id"),
                "rebalance_ts_ms": f("event_ts_ms"),
                "group_protocol": f("group_protocol"),
            },
            since_ms=since_ms,
            until_ms=until_ms,
            groups=[group],
            where=f("is_rebalance"),
        )
        events = _dedupe(events, "rebalance_event_id")
        names = (
            "rebalance_event_id",
            "is_actual",
            "strategy",
            "is_own_strategy",
            "rebalance_protocol",
            "moved_partitions",
            "paused_partitions",
            "paused_partition_seconds",
            "spread_partitions",
            "needs_followup",
            "error",
        )
        metrics = self.scan(
            GROUP_METRICS,
            {"event_id": f("event_id"), **{c: f(c) for c in names}},
            since_ms=since_ms,
            until_ms=until_ms,
            groups=[group],
        )
        metrics = _dedupe(metrics).join(events, "rebalance_event_id", join_type="inner")
        found = metrics.to_pylist()
        for r in found:
            if r["is_actual"]:
                r["strategy"] = "actual"
        found.sort(key=lambda r: (r["rebalance_ts_ms"], r["rebalance_event_id"], r["strategy"]))
        return shape.cost_rows(found)

    def advise(
        self,
        group: str,
        *,
        since_ms: int | None,
        until_ms: int | None,
        rows: list[CostRow] | None = None,
        group_protocol: str | None = None,
    ) -> Result:
        """The group's rebalances priced under every strategy, and the advice."""
        if rows is None:
            rows, group_protocol = self.cost_rows(group, since_ms=since_ms, until_ms=until_ms)
        return shape.advise_result(
            rows, group=group, group_protocol=group_protocol, cluster=self.cluster
        )

    # -- 3. diverging ----------------------------------------------------------------------

    def diverging(
        self, *, strategy: str | None, since_ms: int | None = None, until_ms: int | None = None
    ) -> Result:
        """Groups whose latest actual assignment in the range differs from their own
        strategy's (or ``strategy``'s) expected one (``queries``, 3). Two reads: the light
        columns of every rebalance in the range, then the expected assignments of only the
        diverging groups' latest rebalances."""
        f = pc.field
        columns = {
            "event_id": f("event_id"),
            **{c: f(c) for c in GROUP},
            **{c: f(c) for c in ORDER},
            "strategy": f("strategy"),
            "members": _size("members_after"),
            "own_strategy_divergent": f("own_strategy_divergent"),
            "divergent": f("divergent"),
        }
        table = self.scan(REBALANCE_EVENTS, columns, since_ms=since_ms, until_ms=until_ms)
        latest = _latest(_dedupe(table), ORDER).to_pylist()
        found = []
        for r in latest:
            marks = dict(r["divergent"] or ())
            verdict = r["own_strategy_divergent"] if strategy is None else marks.get(strategy)
            if verdict:
                r["divergent"] = _divergent(r["divergent"])
                found.append(r)
        found.sort(key=lambda r: (r["cluster"], r["group_id"]))
        notes: list[str] = []
        found = self._found(found, notes)
        counts = self._divergent_members(found, strategy) if found else {}
        for r in found:
            r["divergent_members"] = counts.get(r["event_id"])
        return shape.diverging_result(found, notes, strategy=strategy, cluster=self.cluster)

    def _divergent_members(
        self, found: Sequence[Mapping[str, Any]], strategy: str | None
    ) -> dict[str, int | None]:
        """event id -> how many members the checked strategy's expected assignment moves
        (None: no expected entry for it), read for those rebalances only."""
        f = pc.field
        ids = [r["event_id"] for r in found]
        times = [r["event_ts_ms"] for r in found]
        table = self.scan(
            REBALANCE_EVENTS,
            {
                "event_id": f("event_id"),
                "expected": f("expected"),
            },
            since_ms=min(times),
            upto_ms=max(times),
            groups=[r["group_id"] for r in found],
            where=f("event_id").isin(ids),
        )
        out: dict[str, int | None] = {}
        for r in _dedupe(table).to_pylist():
            checked = [
                e
                for e in r["expected"] or ()
                if (e["own"] if strategy is None else e["strategy"] == strategy)
            ]
            members = checked[0]["divergent_members"] if checked else None
            out[r["event_id"]] = None if members is None else len(members)
        return out

    # -- 4. top-churn ----------------------------------------------------------------------

    def top_churn(self, *, since_ms: int | None, until_ms: int | None) -> Result:
        """Groups by partitions moved (then revoked) in the range (``queries``, 4)."""
        f = pc.field
        columns = {
            "event_id": f("event_id"),
            **{c: f(c) for c in GROUP},
            "is_rebalance": f("is_rebalance").cast(pa.int64()),
            "moved": f("churn", "moved_partitions").cast(pa.int64()),
            "revoked": f("churn", "revoked_partitions").cast(pa.int64()),
        }
        table = _dedupe(self.scan(REBALANCE_EVENTS, columns, since_ms=since_ms, until_ms=until_ms))
        sums = table.group_by(list(GROUP), use_threads=False).aggregate(
            [
                ("moved", "sum"),
                ("revoked", "sum"),
                ("is_rebalance", "sum"),
                ("moved", "max"),
            ]
        )
        sums = sums.rename_columns(
            {
                "moved_sum": "moved",
                "revoked_sum": "revoked",
                "is_rebalance_sum": "rebalances",
                "moved_max": "max_moved",
            }
        )
        sums = sums.sort_by(
            [("moved", _DESC), ("revoked", _DESC), ("cluster", _ASC), ("group_id", _ASC)]
        )
        notes: list[str] = []
        return shape.top_churn_result(
            self._found(sums.to_pylist(), notes), notes, cluster=self.cluster
        )

    # -- 5. owner --------------------------------------------------------------------------

    def owner(
        self,
        topic: str,
        partition: int,
        *,
        at_ms: int,
        since_ms: int | None = None,
        group: str | None = None,
        as_recorded: bool = False,
    ) -> Result:
        """Who owned ``topic``-``partition`` at ``at_ms``, per group (``queries``, 5,
        :meth:`streaming.audit.queries.Audit.owner`). The holdings are read by date and
        statistics from ``since_ms`` to ``at_ms``, then only the holding groups' rebalances
        from the oldest holding on: no read of the commit history (``as_recorded``: delta-rs
        finds the version at ``at_ms`` by a binary search over the commits' times)."""
        f = pc.field
        as_of = at_ms if as_recorded else None
        where = (f("topic") == topic) & (f("partition") == partition)
        # first the groups that held it and when last (three narrow columns of the window),
        # then their rows of those days only (the ids and member columns are the costly ones)
        last = self.scan(
            MEMBER_ASSIGNMENTS,
            {"cluster": f("cluster"), "group_id": f("group_id"), "ts": f("event_ts_ms")},
            since_ms=since_ms,
            upto_ms=at_ms,
            groups=None if group is None else [group],
            where=where,
            as_of_ms=as_of,
        )
        last = last.group_by(["cluster", "group_id"], use_threads=False).aggregate([("ts", "max")])
        held = (
            []
            if last.num_rows == 0
            else self.scan(
                MEMBER_ASSIGNMENTS,
                {
                    "event_id": f("event_id"),
                    **{c: f(c) for c in GROUP},
                    "rebalance_event_id": f("rebalance_event_id"),
                    "owner_generation": f("generation"),
                    "held_ts_ms": f("event_ts_ms"),
                    "member_id": f("member_id"),
                    "group_instance_id": f("group_instance_id"),
                    "client_id": f("client_id"),
                },
                since_ms=since_ms,
                upto_ms=at_ms,
                groups=sorted(set(last["group_id"].to_pylist())),
                dates=[_date(ts) for ts in last["ts_max"].to_pylist()],
                where=where,
                as_of_ms=as_of,
            )
        )
        holdings: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in [] if isinstance(held, list) else _dedupe(held).to_pylist():
            key = (r["cluster"], r["group_id"])
            last = holdings.setdefault(key, [])
            rank = (r["held_ts_ms"], r["owner_generation"])
            if not last or rank > (last[0]["held_ts_ms"], last[0]["owner_generation"]):
                last[:] = [r]
            elif rank == (last[0]["held_ts_ms"], last[0]["owner_generation"]):
                last.append(r)
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        if holdings:
            events = self.scan(
                REBALANCE_EVENTS,
                {"event_id": f("event_id"), **{c: f(c) for c in GROUP}, **{c: f(c) for c in ORDER}},
                since_ms=min(r[0]["held_ts_ms"] for r in holdings.values()),
                upto_ms=at_ms,
                groups=sorted({g for _c, g in holdings}),
                as_of_ms=as_of,
            )
            for r in _latest(_dedupe(events), ORDER).to_pylist():
                latest[(r["cluster"], r["group_id"])] = r
        found = []
        for key, rows in holdings.items():
            last_event = latest.get(key)
            for r in rows:
                found.append(
                    {
                        **r,
                        "latest_event_id": None if last_event is None else last_event["event_id"],
                        "latest_ts_ms": None if last_event is None else last_event["event_ts_ms"],
                        "latest_generation": (
                            None if last_event is None else last_event["generation_after"]
                        ),
                    }
                )
        found.sort(key=lambda r: (r["cluster"], r["group_id"], r["member_id"]))
        notes: list[str] = []
        return shape.owner_result(
            self._found(found, notes),
            notes,
            topic=topic,
            partition=partition,
            at_ms=at_ms,
            group=group,
            cluster=self.cluster,
        )


def _arrow_fs(uri: str) -> tuple[Any, str]:
    """Arrow's file system of ``uri`` and the path in it (a plain path: the local one)."""
    import os

    from pyarrow import fs

    if "://" not in uri and not uri.startswith("file:"):
        return fs.LocalFileSystem(), os.path.abspath(uri)
    filesystem, root = fs.FileSystem.from_uri(uri)
    return filesystem, str(root)


def _storms(
    cluster: str,
    group: str,
    events: list[dict[str, Any]],
    min_rebalances: int,
    window_ms: int,
) -> list[dict[str, Any]]:
    """The storms of one group's rebalances (in order), as ``queries`` finds them: each
    rebalance's window ``[t, t + M)`` (its peers of the same ms included), the windows with
    at least N merged while they share a rebalance, each storm's pauses summed once."""
    times = [e["event_ts_ms"] for e in events]
    windows = []  # (first index, last index, n, start ms, last ms), 0-based
    for ts in times:
        first = bisect.bisect_left(times, ts)
        last = bisect.bisect_right(times, ts + window_ms - 1) - 1
        n = last - first + 1
        if n >= min_rebalances:
            windows.append((first, last, n, ts, times[last]))
    windows.sort(key=lambda w: (w[0], w[1]))
    storms: list[list[int]] = []  # lo, hi, max n, start, end
    for first, last, n, start, end in windows:
        if storms and first <= storms[-1][1]:
            s = storms[-1]
            s[1], s[2] = max(s[1], last), max(s[2], n)
            s[3], s[4] = min(s[3], start), max(s[4], end)
        else:
            storms.append([first, last, n, start, end])
    out = []
    for lo, hi, peak, start, end in storms:
        paused = [_paused_s(e) for e in events[lo : hi + 1]]
        out.append(
            {
                "cluster": cluster,
                "group_id": group,
                "start_ms": start,
                "end_ms": end,
                "rebalances": hi - lo + 1,
                "max_in_window": peak,
                "paused_partition_seconds": sum(p for p in paused if p is not None),
            }
        )
    return out


def _paused_s(event: Mapping[str, Any]) -> float | None:
    """What a rebalance paused, in partition-seconds (rule C5 of ``docs/tracking.md``):
    paused partitions x (measured duration, else the sync phase, else 0)."""
    if event["paused"] is None:
        return None
    duration = event["duration_ms"]
    if duration is None:
        duration = event["assignment_duration_ms"]
    return float(event["paused"] * (duration or 0) / 1000.0)
