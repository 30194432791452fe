"""The working context of one ``apply`` call, and the state queries the handlers share.

Internal to :mod:`streaming.tracking`: :class:`Context` carries the state being built, the
configuration, the events emitted so far and the topics the group is interested in; the
functions below read the state the same way for classic and KIP-848 groups (partition
counts as of a time, racks and topic ids, signs of life from commits, collector sightings).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from assign_core.model import TopicPartition
from streaming.tracking.config import TrackerConfig
from streaming.tracking.events import TrackerEvent
from streaming.tracking.model import Observation
from streaming.tracking.state import GroupState

__all__ = [
    "UNSTABLE_STATES",
    "Context",
    "collector_window",
    "commit_interval_ms",
    "counts_for",
    "last_commit_ts_ms",
    "racks_for",
    "snapshot_interval_ms",
    "topic_ids_for",
]

#: Collector states that mean a rebalance is under way (classic and KIP-848).
UNSTABLE_STATES = frozenset(
    {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}
)


@dataclass(slots=True)
class Context:
    state: GroupState
    config: TrackerConfig
    now_ms: int
    interest: set[str]
    upcoming: Sequence[Observation] = ()
    """The observations of this call, in application order (for look-ahead)."""
    index: int = 0
    """Position of the observation being applied in ``upcoming``."""
    events: list[TrackerEvent] = field(default_factory=list)
    changed: bool = False

    def emit(self, *events: TrackerEvent) -> None:
        self.events.extend(events)

    def skip(self, reason: str) -> None:
        counters = self.state.counters
        counters[reason] = counters.get(reason, 0) + 1

    def ahead(self) -> Iterable[Observation]:
        """The observations after the current one."""
        return self.upcoming[self.index + 1 :]


def counts_for(
    state: GroupState,
    topics: Iterable[str],
    ts_ms: int,
    evidence: Iterable[TopicPartition],
    authoritative: Mapping[str, int] | None = None,
    *,
    exact: bool = False,
) -> tuple[dict[str, int], dict[str, str]]:
    """Partition count of each topic as of ``ts_ms`` and where it came from.

    ``exact`` (a classic group using one of Kafka's client assignors, which hand out every
    partition of a subscribed topic the leader knows, the ones cooperative-sticky holds back
    being reported as owned): the highest partition assigned or owned + 1 *is* the leader's
    count (``assignment``); a subscribed topic with none had no metadata at the leader.
    Otherwise ``records`` (KIP-848 partition metadata, what the coordinator used), else
    ``collector`` (the newest count the collector had reported by ``ts_ms``), raised to
    ``inferred`` when ``evidence`` holds a higher partition number. Topics with no count (or
    0) are left out.
    """
    highest: dict[str, int] = {}
    for tp in evidence:
        if tp.partition + 1 > highest.get(tp.topic, 0):
            highest[tp.topic] = tp.partition + 1
    counts: dict[str, int] = {}
    sources: dict[str, str] = {}
    if exact:
        for t in dict.fromkeys(topics):
            if highest.get(t, 0) > 0:
                counts[t] = highest[t]
                sources[t] = "assignment"
        return counts, sources
    for t in dict.fromkeys(topics):
        count: int | None = None
        source = ""
        if authoritative is not None and t in authoritative:
            count, source = authoritative[t], "records"
        else:
            meta = state.topics.get(t)
            if meta is not None:
                known = meta.count_at(ts_ms)
                if known is not None:
                    count, source = known, "collector"
        seen = highest.get(t, 0)
        if seen and (count is None or seen > count):
            count, source = seen, "inferred"
        if count is not None and count > 0:
            counts[t] = count
            sources[t] = source
    return counts, sources


def racks_for(
    state: GroupState, topics: Iterable[str]
) -> dict[str, tuple[tuple[str, ...], ...] | None]:
    return {t: (m.racks if (m := state.topics.get(t)) is not None else None) for t in topics}


def topic_ids_for(
    state: GroupState, topics: Iterable[str], known: Mapping[str, str] | None = None
) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for t in topics:
        tid = known.get(t) if known else None
        if tid is None and (meta := state.topics.get(t)) is not None:
            tid = meta.topic_id
        out[t] = tid
    return out


def last_commit_ts_ms(state: GroupState, partitions: Iterable[TopicPartition]) -> int | None:
    """The newest commit of any of ``partitions`` (commit timestamps), None if none."""
    newest: int | None = None
    for tp in partitions:
        entry = state.commits.get(tp)
        if (
            entry is not None
            and entry.source == "log"
            and (newest is None or entry.commit_ts_ms > newest)
        ):
            newest = entry.commit_ts_ms
    return newest


def commit_interval_ms(state: GroupState, partitions: Iterable[TopicPartition]) -> int | None:
    """The median interval between consecutive commits of ``partitions`` (None: fewer than
    two commits of one partition)."""
    gaps: list[int] = []
    for tp in partitions:
        entry = state.commits.get(tp)
        if entry is None:
            continue
        hist = entry.history
        gaps.extend(hist[i + 1][0] - hist[i][0] for i in range(len(hist) - 1))
    gaps = [g for g in gaps if g > 0]
    if not gaps:
        return None
    return int(statistics.median(gaps))


def snapshot_interval_ms(state: GroupState) -> int | None:
    """The collector's polling interval: the median gap between its snapshots of the group
    (None: fewer than two)."""
    ts = [t for t, _ in state.collector.states]
    gaps = [b - a for a, b in pairwise(ts) if b > a]
    return int(statistics.median(gaps)) if gaps else None


def collector_window(
    state: GroupState, after_ts_ms: int | None, until_ts_ms: int
) -> tuple[int | None, int | None]:
    """(first snapshot in ``(after, until]`` that saw the group rebalancing, the last
    snapshot before it in that window that saw it not rebalancing)."""
    first_unstable: int | None = None
    last_settled: int | None = None
    for ts, st in state.collector.states:
        if after_ts_ms is not None and ts <= after_ts_ms:
            continue
        if ts > until_ts_ms:
            break
        if st in UNSTABLE_STATES:
            first_unstable = ts
            break
        last_settled = ts
    return first_unstable, last_settled
