"""``audit advise``: a group's recorded rebalances replayed under every strategy (pure part).

The job writes, for every rebalance, one ``group_metrics`` row for the actual assignment and
one per strategy, each with its cost (:mod:`streaming.tracking.cost`: paused partitions and
partition-seconds, follow-up rounds). :func:`summarize` sums them per strategy, as the
exporter's ``kafka_consumergroup_whatif_*_total`` counters sum the same rows live;
:func:`recommend` turns the sums into one line. Spark only reads the rows
(:meth:`streaming.audit.queries.Audit.advise`).

Rules (``docs/tracking.md``, "Strategy advice"; proven in
``tests/audit/test_audit_units.py``):

A1. Only rebalances count (``is_rebalance``); each strategy's row of each rebalance once.
A2. Per strategy: rebalances, partitions moved, paused partitions and partition-seconds
    (sums), mean and max skew (``spread_partitions``: most minus fewest partitions per
    member, after each rebalance), rebalances that needed a follow-up round, and rebalances
    the strategy could not assign (``failed``; such a row adds nothing to the sums).
A3. The baseline is the group's own strategy as the model prices it (the ``own`` rows), so
    every row is priced alike; without an own row (an assignor ``assign_core`` lacks) the
    ``actual`` rows.
A4. Candidates: strategies that assigned every rebalance the strategies were run for (a
    rebalance that leaves the group empty has no expected assignments: only ``actual``
    counts it). The best has the fewest paused partition-seconds, then the fewest moved
    partitions, then the smaller max skew.
A5. Fewer than ``min_rebalances`` rebalances, or no measured duration at all (every
    partition-second 0): "history too short", no advice.
A6. The best no cheaper than the baseline: keep the strategy. Otherwise the line names the
    saving in partition-seconds and percent, and for a server-side assignor (``uniform``,
    ``server-range``) of a classic group, that it means moving to the KIP-848 protocol; for
    a KIP-848 group a classic strategy means moving back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "MIN_REBALANCES",
    "SERVER_SIDE",
    "CostRow",
    "StrategySummary",
    "cumulative_paused",
    "recommend",
    "summarize",
]

MIN_REBALANCES = 3
SERVER_SIDE = frozenset({"uniform", "server-range"})
_KIP848_NAME = {"uniform": "uniform", "server-range": "range"}


@dataclass(frozen=True, slots=True)
class CostRow:
    """One ``group_metrics`` row of a rebalance (``strategy="actual"`` for the actual one)."""

    rebalance_event_id: str
    event_ts_ms: int
    strategy: str
    own: bool
    rebalance_protocol: str
    moved_partitions: int
    paused_partitions: int
    paused_partition_seconds: float
    spread_partitions: int
    needs_followup: bool
    error: str | None


@dataclass(frozen=True, slots=True)
class StrategySummary:
    """A2: one strategy over the group's history."""

    strategy: str
    protocol: str
    own: bool
    rebalances: int
    failed: int
    partitions_moved: int
    paused_partitions: int
    paused_partition_seconds: float
    mean_skew: float | None
    max_skew: int | None
    followup_rebalances: int

    @property
    def side(self) -> str:
        if self.strategy == "actual":
            return "actual"
        return "server" if self.strategy in SERVER_SIDE else "client"


def summarize(rows: Iterable[CostRow]) -> list[StrategySummary]:
    """A1, A2: per strategy; ``actual`` first, then the own strategy, then by paused
    partition-seconds (fewest first), name."""
    by: dict[str, list[CostRow]] = {}
    seen: set[tuple[str, str]] = set()
    for r in rows:
        key = (r.rebalance_event_id, r.strategy)
        if key in seen:
            continue
        seen.add(key)
        by.setdefault(r.strategy, []).append(r)
    out: list[StrategySummary] = []
    for strategy, rs in by.items():
        ok = [r for r in rs if r.error is None]
        skews = [r.spread_partitions for r in ok]
        out.append(
            StrategySummary(
                strategy=strategy,
                protocol=rs[-1].rebalance_protocol,
                own=any(r.own for r in rs),
                rebalances=len(rs),
                failed=len(rs) - len(ok),
                partitions_moved=sum(r.moved_partitions for r in ok),
                paused_partitions=sum(r.paused_partitions for r in ok),
                paused_partition_seconds=sum(r.paused_partition_seconds for r in ok),
                mean_skew=sum(skews) / len(skews) if skews else None,
                max_skew=max(skews) if skews else None,
                followup_rebalances=sum(r.needs_followup for r in ok),
            )
        )
    out.sort(
        key=lambda s: (
            s.strategy != "actual",
            not s.own,
            s.failed > 0,
            s.paused_partition_seconds,
            s.strategy,
        )
    )
    return out


def _fmt(seconds: float) -> str:
    return f"{seconds:,.1f}"


def recommend(
    summaries: Sequence[StrategySummary],
    *,
    group: str,
    group_protocol: str | None,
    min_rebalances: int = MIN_REBALANCES,
) -> str:
    """A3-A6: the one-line advice."""
    actual = next((s for s in summaries if s.strategy == "actual"), None)
    total = actual.rebalances if actual is not None else 0
    if total < min_rebalances:
        return (
            f"history too short: {total} rebalance(s) of {group} recorded, at least "
            f"{min_rebalances} needed to advise"
        )
    if all(s.paused_partition_seconds == 0 for s in summaries):
        return (
            f"history too short: none of the {total} rebalances of {group} has a measured "
            "duration, so nothing can be priced"
        )
    own = next((s for s in summaries if s.own and s.strategy != "actual"), None)
    base = own if own is not None else actual
    assert base is not None
    base_name = base.strategy if own is not None else "its actual assignor"
    priced = max((s.rebalances for s in summaries if s.strategy != "actual"), default=0)
    candidates = [
        s for s in summaries if s.strategy != "actual" and s.failed == 0 and s.rebalances == priced
    ]
    if not candidates:
        return f"no strategy assigned all {priced} priced rebalances of {group}: no advice"
    best = min(
        candidates,
        key=lambda s: (s.paused_partition_seconds, s.partitions_moved, s.max_skew or 0, s.strategy),
    )
    saving = base.paused_partition_seconds - best.paused_partition_seconds
    if best.strategy == base.strategy or saving <= 0:
        return (
            f"keep {base_name}: over {priced} rebalances no other strategy would have paused "
            f"fewer than its {_fmt(base.paused_partition_seconds)} partition-seconds"
        )
    pct = 100.0 * saving / base.paused_partition_seconds if base.paused_partition_seconds else 0
    how = ""
    if best.strategy in SERVER_SIDE and group_protocol != "consumer":
        how = (
            f" (a move to the KIP-848 protocol: group.protocol=consumer, "
            f"group.remote.assignor={_KIP848_NAME[best.strategy]})"
        )
    elif best.strategy not in SERVER_SIDE and group_protocol == "consumer":
        how = " (a move back to the classic protocol)"
    return (
        f"switch {group} from {base_name} to {best.strategy}{how}: "
        f"{_fmt(best.paused_partition_seconds)} instead of "
        f"{_fmt(base.paused_partition_seconds)} paused partition-seconds over {priced} "
        f"rebalances ({_fmt(saving)} fewer, -{pct:.0f}%), {best.partitions_moved} partitions "
        f"moved instead of {base.partitions_moved}"
    )


def cumulative_paused(rows: Iterable[CostRow]) -> dict[str, tuple[list[int], list[float]]]:
    """Per strategy, the rebalance times and the running sum of paused partition-seconds
    (the ``--plot``), failed rows adding nothing."""
    by: dict[str, list[CostRow]] = {}
    seen: set[tuple[str, str]] = set()
    for r in sorted(rows, key=lambda r: (r.event_ts_ms, r.rebalance_event_id)):
        if (r.rebalance_event_id, r.strategy) in seen:
            continue
        seen.add((r.rebalance_event_id, r.strategy))
        by.setdefault(r.strategy, []).append(r)
    out: dict[str, tuple[list[int], list[float]]] = {}
    for strategy, rs in by.items():
        total, times, sums = 0.0, [], []
        for r in rs:
            if r.error is None:
                total += r.paused_partition_seconds
            times.append(r.event_ts_ms)
            sums.append(total)
        out[strategy] = (times, sums)
    return out
