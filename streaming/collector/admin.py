"""I/O: the admin calls of one snapshot (``gather_answers``) -> :class:`AdminAnswers`.

A failed call is recorded as an :class:`~streaming.membership_event.Issue` against its
group or topic; a call that finds the cluster unreachable fails the whole snapshot
(``CONNECTION_ERRORS``), which the loop retries with backoff.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import kafka.errors as kafka_errors
from kafka import (
    OffsetSpec,
    TopicPartition,
)
from kafka.admin import ConfigResource, ConfigResourceType

from streaming.collector.events import (
    AdminAnswers,
    Committed,
    consumed_partitions,
    group_topics,
    is_classic,
    serves_offsets,
)
from streaming.config import (
    CollectorConfig,
    group_matches,
)
from streaming.membership_event import Issue, Stage

log = logging.getLogger("streaming.collector")

#: Errors meaning "the cluster is unreachable": they fail the whole snapshot (and so get
#: the loop's backoff) instead of being recorded against one group or topic.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    kafka_errors.KafkaConnectionError,
    kafka_errors.KafkaTimeoutError,
    kafka_errors.NodeNotReadyError,
    kafka_errors.RequestTimedOutError,
    ConnectionError,
    TimeoutError,
)

#: ListGroups states of a group that is not rebalancing: a classic group's membership changes
#: only through PreparingRebalance and CompletingRebalance (or, from Empty, its first join).
SETTLED_STATES = frozenset({"Stable", "Empty"})

_BATCH = 200  # groups per DescribeGroups / OffsetFetch / DescribeConfigs round
#: The KIP-848 group config (and, prefixed ``group.``, the broker default) of the session.
SESSION_TIMEOUT_CONFIG = "consumer.session.timeout.ms"

Json = dict[str, Any]


# --------------------------------------------------------------------------- I/O: gather


#: Which end offsets a snapshot asks for: every partition of the touched topics (schema
#: version 1), only the partitions some group consumes (version 2), or none (version 2
#: between its end offsets' polls).
EndOffsets = Literal["touched", "consumed", "none"]


def gather_answers(
    admin: Any,
    config: CollectorConfig,
    *,
    clock: Callable[[], float] = time.time,
    end_offsets: EndOffsets = "touched",
    known_committed: Mapping[str, tuple[Any, Mapping[tuple[str, int], Committed]]] | None = None,
    known_descriptions: Mapping[str, Mapping[str, Any]] | None = None,
) -> AdminAnswers:
    """Ask the cluster (through a ``KafkaAdminClient``) everything one snapshot needs.

    ListGroups must succeed (else the snapshot fails); the other calls are batched, fall
    back to one call per group or topic when a batch fails, and record what still fails as
    an ``Issue``. Connection-level errors always propagate. ``known_committed``: group id ->
    (its ListGroups state, its committed offsets) of an earlier snapshot, reused for each
    group still in that state instead of asking OffsetFetch again. ``known_descriptions``:
    group id -> its last ``describe_groups()`` answer, reused as :func:`to_describe` allows
    (None: every classic group is described).
    """
    snapshot_ts_ms = int(clock() * 1000)
    issues: list[Issue] = []
    cluster: Mapping[str, Any] | None = None
    try:
        cluster = admin.describe_cluster()
    except CONNECTION_ERRORS:
        raise
    except kafka_errors.KafkaError as exc:  # e.g. no DESCRIBE on the cluster: carry on
        issues.append(Issue("describe_cluster", describe_error(exc)))
    pattern = config.group_pattern
    listed: dict[str, Mapping[str, Any]] = {}
    for entry in admin.list_groups():
        group_id = str(entry["group_id"])
        if group_matches(pattern, group_id):
            listed.setdefault(group_id, entry)
    groups = [listed[g] for g in sorted(listed)]

    classic_ids, descriptions = to_describe(groups, known_descriptions)
    for chunk in _chunks(classic_ids, _BATCH):
        descriptions.update(
            _with_fallback(admin.describe_groups, chunk, "describe_groups", issues, by="group")
        )

    offset_ids = [str(g["group_id"]) for g in groups if serves_offsets(g)]
    committed: dict[str, Mapping[tuple[str, int], Committed]] = {}
    if known_committed is not None:
        # between the end offsets' polls: OffsetFetch only for a group that is new or whose
        # state moved; the others' committed offsets (their topics) as last fetched
        for g in groups:
            group_id = str(g["group_id"])
            known = known_committed.get(group_id)
            if known is not None and known[0] == g.get("group_state"):
                committed[group_id] = known[1]
        offset_ids = [g for g in offset_ids if g not in committed]
    for chunk in _chunks(offset_ids, _BATCH):
        answer = _with_fallback(
            admin.list_group_offsets, chunk, "list_group_offsets", issues, by="group"
        )
        for group_id, offsets in answer.items():
            committed[group_id] = {
                (str(tp[0]), int(tp[1])): (int(om[0]), om[1], om[2]) for tp, om in offsets.items()
            }

    consumer_ids = [str(g["group_id"]) for g in groups if _is_consumer_protocol(g)]
    session_timeouts: dict[str, int] = {}
    for chunk in _chunks(consumer_ids, _BATCH):
        session_timeouts.update(
            _with_fallback(
                lambda ids: _session_timeouts(admin, ids),
                chunk,
                "describe_configs",
                issues,
                by="group",
            )
        )

    touched: set[str] = set()
    for group_id in listed:
        touched |= group_topics(descriptions.get(group_id), committed.get(group_id))
    if any(not group_topics(None, committed.get(g)) for g in consumer_ids):
        # a KIP-848 group that has not committed yet: nothing here says which topics it
        # subscribes, and its records name them by id. Every topic is described, so the
        # tracker can name the ids of its first target (it keeps the subscribed ones).
        try:
            touched |= {str(t) for t in admin.list_topics() if not str(t).startswith("__")}
        except CONNECTION_ERRORS:
            raise
        except kafka_errors.KafkaError as exc:
            issues.append(Issue("describe_topics", describe_error(exc)))
    topics: list[Mapping[str, Any]] = []
    if touched:
        try:
            topics = list(admin.describe_topics(sorted(touched)))
        except CONNECTION_ERRORS:
            raise
        except kafka_errors.KafkaError as exc:
            issues.append(Issue("describe_topics", describe_error(exc)))

    specs: dict[str, list[tuple[str, int]]] = {}
    for meta in topics:
        if int(meta.get("error_code") or 0) == 0 and meta.get("name"):
            name = str(meta["name"])
            specs[name] = [(name, int(p["partition_index"])) for p in meta.get("partitions") or ()]
    if end_offsets == "consumed":
        consumed = set().union(*consumed_partitions(descriptions, committed).values())
        specs = {t: [tp for tp in tps if tp in consumed] for t, tps in specs.items()}
        specs = {t: tps for t, tps in specs.items() if tps}
    latest: dict[tuple[str, int], int] = {}
    end_offsets_ts_ms: int | None = None
    if end_offsets != "none" and (specs or end_offsets == "consumed"):
        end_offsets_ts_ms = int(clock() * 1000)
        latest = _latest_offsets(admin, specs, issues)
    return AdminAnswers(
        snapshot_ts_ms=snapshot_ts_ms,
        cluster=cluster,
        groups=groups,
        descriptions=descriptions,
        committed=committed,
        topics=topics,
        end_offsets=latest,
        end_offsets_ts_ms=end_offsets_ts_ms,
        session_timeouts=session_timeouts,
        issues=issues,
        described=classic_ids,
    )


def to_describe(
    groups: Sequence[Mapping[str, Any]],
    known: Mapping[str, Mapping[str, Any]] | None,
) -> tuple[list[str], dict[str, Mapping[str, Any]]]:
    """Which of the listed classic ``groups`` DescribeGroups asks for, and the descriptions
    reused for the others: ``(group ids to describe, group id -> known description)``.

    A group's ``known`` description (None: a full pass, every group described) is reused
    when the group is settled (:data:`SETTLED_STATES`) and ListGroups lists it in the state
    that description has: a classic group's members and assignments change only through a
    rebalance, which ListGroups shows as a state that is not settled, or as a state other
    than the one described. A new group, one not described successfully, one whose state
    moved and one rebalancing are described.
    """
    ask: list[str] = []
    reused: dict[str, Mapping[str, Any]] = {}
    for g in groups:
        if not is_classic(g):
            continue
        group_id = str(g["group_id"])
        state = g.get("group_state")
        description = None if known is None else known.get(group_id)
        if (
            description is not None
            and state in SETTLED_STATES
            and description.get("group_state") == state
        ):
            reused[group_id] = description
        else:
            ask.append(group_id)
    return ask, reused


def _is_consumer_protocol(listed: Mapping[str, Any]) -> bool:
    return str(listed.get("group_type") or "").lower() == "consumer"


def _session_timeouts(admin: Any, group_ids: Sequence[str]) -> dict[str, int]:
    """DescribeConfigs of KIP-848 groups: the session timeout in effect for each (the
    group's dynamic config, else the broker's default, ``config_filter="all"``)."""
    resources = [
        ConfigResource(ConfigResourceType.GROUP, g, configs=[SESSION_TIMEOUT_CONFIG])
        for g in group_ids
    ]
    answer = admin.describe_configs(resources, config_filter="all").get("group", {})
    out: dict[str, int] = {}
    for group_id, configs in answer.items():
        value = (configs.get(SESSION_TIMEOUT_CONFIG) or {}).get("value")
        if value is not None and str(value).isdigit():
            out[str(group_id)] = int(value)
    return out


def _latest_offsets(
    admin: Any, specs: Mapping[str, list[tuple[str, int]]], issues: list[Issue]
) -> dict[tuple[str, int], int]:
    def latest(topics: Sequence[str]) -> dict[tuple[str, int], int]:
        request = {TopicPartition(*tp): OffsetSpec.LATEST for t in topics for tp in specs[t]}
        answer = admin.list_partition_offsets(request)
        return {(str(tp[0]), int(tp[1])): int(o.offset) for tp, o in answer.items()}

    return _with_fallback(latest, sorted(specs), "list_partition_offsets", issues, by="topic")


def _with_fallback(
    call: Callable[[list[str]], Mapping[Any, Any]],
    keys: list[str],
    stage: Stage,
    issues: list[Issue],
    *,
    by: Literal["group", "topic"],
) -> dict[Any, Any]:
    """``call(keys)``; if that fails, ``call([key])`` for each key, recording failures."""
    if not keys:
        return {}
    try:
        return dict(call(keys))
    except CONNECTION_ERRORS:
        raise
    except kafka_errors.KafkaError as exc:
        if len(keys) == 1:
            issues.append(_issue(stage, exc, keys[0], by))
            return {}
        log.debug("%s failed for %d keys (%s); retrying one by one", stage, len(keys), exc)
    results: dict[Any, Any] = {}
    for key in keys:
        try:
            results.update(call([key]))
        except CONNECTION_ERRORS:
            raise
        except kafka_errors.KafkaError as exc:
            issues.append(_issue(stage, exc, key, by))
    return results


def _issue(stage: Stage, exc: BaseException, key: str, by: str) -> Issue:
    if by == "group":
        return Issue(stage, describe_error(exc), group_id=key)
    return Issue(stage, describe_error(exc), topic=key)


def describe_error(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return text if text.startswith(name) or name in text else f"{name}: {text}"


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
