"""What both engines share: the found records of each subcommand -> a
:class:`~streaming.audit.render.Result` (or a :class:`Timeline`, or ``advise``'s rows).

The Spark engine (:mod:`streaming.audit.queries`) and the delta-rs engine
(:mod:`streaming.audit.lake`) each find the records of a subcommand (pyspark ``Row`` objects
or dicts: anything indexed by column name) in the order and number the semantics of
:mod:`streaming.audit.queries` say; everything from there on is here, once, so the two
answer alike. Imports neither pyspark nor deltalake.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from streaming.audit import AuditError
from streaming.audit.advise import CostRow, recommend, summarize
from streaming.audit.render import Result
from streaming.audit.times import format_ms

__all__ = [
    "GROUP",
    "ORDER",
    "Timeline",
    "advise_result",
    "cost_rows",
    "diverging_result",
    "history_result",
    "label",
    "owner_result",
    "storms_result",
    "timeline_of",
    "top_churn_result",
]

#: A group's rebalances in order: event time, then generation, then log position.
ORDER = ("event_ts_ms", "generation_after", "source_partition", "source_offset")
GROUP = ("cluster", "group_id")

#: A found record: a pyspark ``Row`` or a dict, indexed by column name.
Record = Any

HISTORY_COLUMNS = (
    "time",
    "cluster",
    "generation_before",
    "generation_after",
    "members_before",
    "members_after",
    "cause",
    "moved",
    "revoked",
    "skew",
    "imbalance",
    "strategy",
    "divergent",
)
STORMS_COLUMNS = (
    "cluster",
    "group_id",
    "window_start",
    "window_end",
    "rebalances",
    "max_in_window",
    "paused_partition_seconds",
)
DIVERGING_COLUMNS = (
    "cluster",
    "group_id",
    "time",
    "generation",
    "strategy",
    "checked",
    "members",
    "divergent_members",
    "divergent",
)
TOP_CHURN_COLUMNS = ("cluster", "group_id", "moved", "revoked", "rebalances", "max_moved")
OWNER_COLUMNS = (
    "cluster",
    "group_id",
    "generation",
    "generation_time",
    "status",
    "member_id",
    "group_instance_id",
    "client_id",
    "owner_generation",
)
ADVISE_COLUMNS = (
    "strategy",
    "side",
    "protocol",
    "own",
    "rebalances",
    "partitions_moved",
    "paused_partitions",
    "paused_partition_seconds",
    "mean_skew",
    "max_skew",
    "followup_rebalances",
    "failed",
)


def where(cluster: str | None) -> str:
    return "" if cluster is None else f" in cluster {cluster!r}"


def history_result(
    found: Iterable[Record], notes: list[str], *, group: str, cluster: str | None
) -> Result:
    """``history``: ``found`` holds ``event_ts_ms`` and the other columns, in order."""
    rows = [(format_ms(r["event_ts_ms"]), *(r[c] for c in HISTORY_COLUMNS[1:])) for r in found]
    if not rows:
        notes.append(f"no rebalances of group {group!r}{where(cluster)} in the range")
    return Result(HISTORY_COLUMNS, rows, notes)


def storms_result(
    found: Iterable[Record],
    notes: list[str],
    *,
    cluster: str | None,
    min_rebalances: int,
    window_ms: int,
) -> Result:
    """``storms``: ``found`` holds each storm's bounds in ms, sums and counts, costliest first."""
    rows = [
        (
            r["cluster"],
            r["group_id"],
            format_ms(r["start_ms"]),
            format_ms(r["end_ms"]),
            r["rebalances"],
            r["max_in_window"],
            round(r["paused_partition_seconds"], 3),
        )
        for r in found
    ]
    if not rows:
        notes.append(
            f"no group{where(cluster)} had {min_rebalances} or more rebalances within "
            f"{window_ms / 60_000:g} minutes in the range"
        )
    return Result(STORMS_COLUMNS, rows, notes)


def diverging_result(
    found: Iterable[Record], notes: list[str], *, strategy: str | None, cluster: str | None
) -> Result:
    """``diverging``: ``found`` holds each diverging group's latest rebalance."""
    rows = [
        (
            r["cluster"],
            r["group_id"],
            format_ms(r["event_ts_ms"]),
            r["generation_after"],
            r["strategy"],
            strategy or r["strategy"],
            r["members"],
            # no expected entry for the strategy: no count (Spark's size() of null: null/-1)
            None if (r["divergent_members"] or 0) < 0 else r["divergent_members"],
            r["divergent"],
        )
        for r in found
    ]
    if not rows:
        against = f"strategy {strategy!r}" if strategy else "their own strategy"
        notes.append(f"no group{where(cluster)} diverges from {against} at its latest rebalance")
    return Result(DIVERGING_COLUMNS, rows, notes)


def top_churn_result(found: Iterable[Record], notes: list[str], *, cluster: str | None) -> Result:
    rows = [tuple(r[c] for c in TOP_CHURN_COLUMNS) for r in found]
    if not rows:
        notes.append(f"no rebalances{where(cluster)} in the range")
    return Result(TOP_CHURN_COLUMNS, rows, notes)


def owner_result(
    found: Iterable[Record],
    notes: list[str],
    *,
    topic: str,
    partition: int,
    at_ms: int,
    group: str | None,
    cluster: str | None,
) -> Result:
    """``owner``: ``found`` holds, per group, its last holding of the partition
    (``rebalance_event_id``, ``owner_generation``, ``held_ts_ms``, the member) and its latest
    rebalance at or before T (``latest_event_id``, ``latest_ts_ms``, ``latest_generation``;
    null when none was read)."""
    rows = []
    for r in found:
        owned = (
            r["latest_event_id"] is None
            or r["latest_event_id"] == r["rebalance_event_id"]
            or r["held_ts_ms"] >= r["latest_ts_ms"]
        )
        generation = r["owner_generation"] if owned else r["latest_generation"]
        since_ms = r["held_ts_ms"] if owned else r["latest_ts_ms"]
        rows.append(
            (
                r["cluster"],
                r["group_id"],
                generation,
                format_ms(since_ms),
                "owner" if owned else "released",
                r["member_id"],
                r["group_instance_id"],
                r["client_id"],
                r["owner_generation"],
            )
        )
    if not rows:
        who = f"group {group!r}" if group else "any group"
        notes.append(
            f"no record of {who}{where(cluster)} holding {topic}-{partition} at or before "
            f"{format_ms(at_ms)}"
        )
    return Result(OWNER_COLUMNS, rows, notes)


def cost_rows(found: Sequence[Record]) -> tuple[list[CostRow], str | None]:
    """``advise``'s rows (in order) as :class:`CostRow`, and the group protocol of the last."""
    protocol = found[-1]["group_protocol"] if found else None
    return [
        CostRow(
            rebalance_event_id=r["rebalance_event_id"],
            event_ts_ms=r["rebalance_ts_ms"],
            strategy=r["strategy"],
            own=bool(r["is_own_strategy"]),
            rebalance_protocol=r["rebalance_protocol"],
            moved_partitions=r["moved_partitions"],
            paused_partitions=r["paused_partitions"],
            paused_partition_seconds=r["paused_partition_seconds"],
            spread_partitions=r["spread_partitions"],
            needs_followup=bool(r["needs_followup"]),
            error=r["error"],
        )
        for r in found
    ], protocol


def advise_result(
    rows: list[CostRow], *, group: str, group_protocol: str | None, cluster: str | None
) -> Result:
    """The group's rebalances priced under every strategy, and the advice
    (:mod:`streaming.audit.advise`)."""
    summaries = summarize(rows)
    out = [
        (
            s.strategy,
            s.side,
            s.protocol,
            s.own,
            s.rebalances,
            s.partitions_moved,
            s.paused_partitions,
            round(s.paused_partition_seconds, 3),
            None if s.mean_skew is None else round(s.mean_skew, 2),
            s.max_skew,
            s.followup_rebalances,
            s.failed,
        )
        for s in summaries
    ]
    notes: list[str] = []
    if not out:
        notes.append(f"no rebalances of group {group!r}{where(cluster)} in the range")
    footer = recommend(summaries, group=group, group_protocol=group_protocol)
    return Result(ADVISE_COLUMNS, out, notes, footer=footer)


class Timeline:
    """What ``history --plot`` draws: per rebalance, the partitions each member held."""

    def __init__(self) -> None:
        self.generations: list[int] = []
        self.times_ms: list[int] = []
        self.counts: list[dict[str, int]] = []  # member id -> partitions, per rebalance
        self.labels: dict[str, str] = {}  # member id -> a short display name
        self.moved: list[int] = []
        self.revoked: list[int] = []
        self.causes: list[str] = []


def timeline_of(found: Sequence[Record], *, group: str) -> Timeline:
    """The timeline of a group's rebalances in order: each record holds ``generation_after``,
    ``event_ts_ms``, ``cluster``, ``counts`` (member -> partitions held, a dict or pairs),
    ``members`` (``member_id``, ``group_instance_id``), ``moved``, ``revoked``, ``cause``."""
    clusters = sorted({r["cluster"] for r in found})
    if len(clusters) > 1:
        raise AuditError(
            f"--cluster: group {group!r} is in clusters {', '.join(clusters)}; "
            "choose one with --cluster to plot it"
        )
    out = Timeline()
    for r in found:
        out.generations.append(r["generation_after"])
        out.times_ms.append(r["event_ts_ms"])
        out.counts.append(dict(r["counts"] or {}))
        out.moved.append(r["moved"])
        out.revoked.append(r["revoked"])
        out.causes.append(r["cause"])
        for m in r["members"] or ():
            out.labels[m["member_id"]] = label(m["member_id"], m["group_instance_id"])
    for counts in out.counts:
        for member in counts:
            out.labels.setdefault(member, label(member, None))
    return out


def label(member_id: str, group_instance_id: str | None) -> str:
    """A short name for a member: its static id, else the member id cut to 20 characters
    (Kafka's ids are ``<client id>-<uuid>``, so the start is the readable part)."""
    if group_instance_id:
        return group_instance_id
    return member_id if len(member_id) <= 20 else member_id[:19] + "…"


def limited(rows: list[Any], limit: int | None, notes: list[str]) -> list[Any]:
    """The first ``limit`` of ``rows`` (all when None), with a note when more exist."""
    if limit is not None and len(rows) > limit:
        notes.append(f"showing the first {limit} rows (--limit N, 0 for all)")
        return rows[:limit]
    return rows
