"""The Prometheus sink: names and labels, values from tracker events, removal, idempotency.

The exporter runs for real (port 0) and is scraped over HTTP; events are hand-built.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from assign_core.model import TopicPartition
from streaming.sinks import metric_names as mn
from streaming.sinks import prometheus
from streaming.sinks.prometheus import PrometheusSink, _CachedExposition
from streaming.tracking.events import (
    ChurnFigures,
    ExpectedAssignment,
    GroupDeleted,
    GroupMetricsRow,
    GroupStatus,
    MemberInfo,
    OffsetCommitRow,
    PartitionLagRow,
    RebalanceEvent,
    SkewFigures,
    TrackedGroups,
    event_id,
    to_row,
)

pytestmark = pytest.mark.unit

CLUSTER = "local"
GROUP = "orders"
T0 = 1_700_000_000_000


# -- factories ------------------------------------------------------------------------------


def member(member_id: str, *parts: int, topic: str = "t", client_id: str = "c") -> MemberInfo:
    return MemberInfo(
        member_id=member_id,
        group_instance_id=None,
        client_id=client_id,
        client_host="/127.0.0.1",
        rack=None,
        topics=(topic,),
        partitions=tuple(TopicPartition(topic, p) for p in parts),
        session_timeout_ms=45_000,
        rebalance_timeout_ms=300_000,
    )


def skew(counts: list[int]) -> SkewFigures:
    mean = sum(counts) / len(counts) if counts else 0.0
    return SkewFigures(
        members=len(counts),
        partitions=sum(counts),
        min_partitions=min(counts, default=0),
        max_partitions=max(counts, default=0),
        spread_partitions=max(counts, default=0) - min(counts, default=0),
        mean_partitions=mean,
        imbalance_ratio=max(counts) / mean if mean else 1.0,
        cv=0.0,
    )


def rebalance(
    generation: int,
    members: list[MemberInfo],
    *,
    group: str = GROUP,
    moved: int = 0,
    revoked: int = 0,
    duration_ms: int | None = 1500,
    cause: str = "join",
    ts_ms: int | None = None,
    offset: int | None = None,
    strategy: str | None = "range",
    rebalance_protocol: str = "eager",
    group_protocol: str = "classic",
    own: str | None = None,
) -> RebalanceEvent:
    """A rebalance whose expected assignments are ``roundrobin`` (not own) and, with ``own``,
    the own strategy under that name (both matching the actual assignment)."""
    ts = T0 + generation * 1000 if ts_ms is None else ts_ms
    source_offset = 100 + generation if offset is None else offset
    actual = {m.member_id: m.partitions for m in members}
    expected = tuple(
        ExpectedAssignment(
            strategy=name,
            side="client",
            own=name == own,
            assignment=actual,
            withheld=(),
            error=None,
            divergent=False,
            divergent_members=(),
            skew=skew([len(p) for p in actual.values()]),
            churn=None,
        )
        for name in ([own] if own is not None else []) + ["roundrobin"]
    )
    return RebalanceEvent(
        event_id=event_id("rebalance", CLUSTER, group, generation, f"7:{source_offset}"),
        cluster=CLUSTER,
        group_id=group,
        event_ts_ms=ts,
        group_protocol=group_protocol,  # type: ignore[arg-type]
        protocol_type="consumer",
        strategy=strategy,
        rebalance_protocol=rebalance_protocol,  # type: ignore[arg-type]
        is_rebalance=True,
        generation_before=generation - 1 if generation else None,
        generation_after=generation,
        leader_before=None,
        leader_after=members[0].member_id if members else None,
        members_before=(),
        members_after=tuple(members),
        joined=tuple(m.member_id for m in members),
        left=(),
        static_rejoins=(),
        departures=(),
        cause=cause,  # type: ignore[arg-type]
        cause_rule=1,
        cause_detail="",
        cause_factors=(),
        started_ts_ms=ts - (duration_ms or 0),
        completed_ts_ms=ts,
        duration_ms=duration_ms,
        duration_max_ms=duration_ms,
        duration_source="log",
        assignment_duration_ms=10,
        completion="completed",
        actual=actual,
        actual_skew=skew([len(p) for p in actual.values()]),
        churn=ChurnFigures(
            owned_before_partitions=0,
            moved_partitions=moved,
            revoked_partitions=revoked,
            assigned_partitions=sum(len(p) for p in actual.values()),
            moved_fraction=0.0,
            moved=(),
            joined=(),
            left=(),
        ),
        paused_partitions=(),
        topic_partition_counts={"t": 3},
        topic_partition_count_sources={"t": "collector"},
        expected=expected,
        divergent={e.strategy: False for e in expected},
        own_strategy_divergent=False if own is not None else None,
        own_strategy_implementation="java" if own is not None else None,
        source_partition=7,
        source_offset=source_offset,
    )


def metrics_row(
    generation: int,
    strategy: str,
    *,
    ratio: float = 1.5,
    divergent: bool | None = True,
    error: str | None = None,
    spread: int = 1,
    moved: int = 0,
    paused: int = 0,
    paused_seconds: float = 0.0,
) -> GroupMetricsRow:
    return GroupMetricsRow(
        event_id=event_id("group_metrics", CLUSTER, GROUP, generation, strategy),
        cluster=CLUSTER,
        group_id=GROUP,
        event_ts_ms=T0 + generation * 1000,
        rebalance_event_id=event_id("rebalance", CLUSTER, GROUP, generation),
        generation=generation,
        strategy=strategy,
        is_actual=strategy == "actual",
        is_own_strategy=strategy == "range",
        error=error,
        member_count=2,
        partition_count=3,
        min_partitions=1,
        max_partitions=1 + spread,
        spread_partitions=spread,
        imbalance_ratio=ratio,
        cv=0.2,
        moved_partitions=moved,
        revoked_partitions=0,
        assigned_partitions=3,
        moved_fraction=0.0,
        divergent=None if strategy == "actual" else divergent,
        divergent_member_count=1 if divergent else 0,
        rebalance_protocol="eager",
        paused_partitions=paused,
        paused_partition_seconds=paused_seconds,
        needs_followup=False,
    )


def status(
    as_of_ms: int,
    state: str = "Stable",
    *,
    generation: int = 1,
    members: int = 2,
    strategy: str | None = "range",
    rebalance_protocol: str | None = "eager",
    group_protocol: str = "classic",
    lag_status: str | None = None,
) -> GroupStatus:
    return GroupStatus(
        event_id=event_id("group_status", CLUSTER, GROUP),
        cluster=CLUSTER,
        group_id=GROUP,
        event_ts_ms=as_of_ms,
        as_of_ts_ms=as_of_ms,
        group_protocol=group_protocol,
        protocol_type="consumer",
        strategy=strategy,
        state=state,
        state_source="log",
        generation=generation,
        group_epoch=None,
        member_count=members,
        rebalance_protocol=rebalance_protocol,
        last_rebalance_ts_ms=T0,
        last_cause="join",
        committed_partitions=3,
        total_lag_records=10,
        max_lag_seconds=2.0,
        collector_seen_ts_ms=None,
        skipped_records=0,
        lag_status=lag_status,
    )


def lag(
    partition: int,
    records: int | None,
    seconds: float | None,
    *,
    at_ms: int,
    status: str | None = None,
) -> PartitionLagRow:
    return PartitionLagRow(
        event_id=event_id("partition_lag", CLUSTER, GROUP, "t", partition, at_ms),
        cluster=CLUSTER,
        group_id=GROUP,
        event_ts_ms=at_ms,
        topic="t",
        partition=partition,
        committed_offset=100,
        end_offset=None if records is None else 100 + records,
        end_offset_ts_ms=at_ms,
        lag_records=records,
        lag_seconds=seconds,
        lag_seconds_method="interpolated",
        measured_ts_ms=at_ms,
        trigger="commit",
        status=status,
        status_rule=None if status is None else 3,
    )


def offset_tombstone(partition: int, *, at_ms: int) -> OffsetCommitRow:
    return OffsetCommitRow(
        event_id=event_id("offset_commit", CLUSTER, GROUP, 7, at_ms),
        cluster=CLUSTER,
        group_id=GROUP,
        event_ts_ms=at_ms,
        topic="t",
        partition=partition,
        offset=None,
        leader_epoch=None,
        metadata=None,
        commit_ts_ms=None,
        expire_ts_ms=None,
        deleted=True,
        source_partition=7,
        source_offset=999,
    )


def deleted(at_ms: int, group: str = GROUP) -> GroupDeleted:
    return GroupDeleted(
        event_id=event_id("group_deleted", CLUSTER, group, 7, 1000),
        cluster=CLUSTER,
        group_id=group,
        event_ts_ms=at_ms,
        group_protocol="classic",
        last_generation=2,
        reason="deleted",
        source_partition=7,
        source_offset=1000,
    )


# -- scraping -------------------------------------------------------------------------------

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def sink() -> Iterator[PrometheusSink]:
    s = PrometheusSink(max_remembered_events=1000)
    bound = s.start(port=0)
    assert s.port == bound
    try:
        yield s
    finally:
        s.stop()


def scrape(s: PrometheusSink) -> Samples:
    port = s.port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: Any) -> float | None:
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))


def names_with(samples: Samples, **labels: str) -> set[str]:
    want = set(labels.items())
    return {name for name, lbl in samples if want <= set(lbl)}


G = {"cluster": CLUSTER, "group": GROUP}


# -- tests ----------------------------------------------------------------------------------


def test_start_binds_a_free_port_and_serves_health_metrics(sink: PrometheusSink) -> None:
    assert sink.port is not None and sink.port > 0
    sink.record_batch(2.5, 120, 3, 1_700_000_123.0, batch_id=0, unrouted_records=4, offset_gaps=7)
    sink.record_batch(1.0, 10, 0, 1_700_000_124.0, batch_id=1, offset_gaps=2)
    samples = scrape(sink)
    assert value(samples, "rebalance_monitor_unrouted_records_total") == 4
    assert value(samples, "rebalance_monitor_offset_gaps_total") == 9
    sink.record_batch(0.5, 0, 0, 1_700_000_123.0, batch_id=0)  # replayed: ignored
    samples = scrape(sink)
    assert value(samples, "rebalance_monitor_batches_total") == 2
    assert value(samples, "rebalance_monitor_input_rows_total") == 130
    assert value(samples, "rebalance_monitor_bad_records_total") == 3
    assert value(samples, "rebalance_monitor_batch_input_rows") == 10
    assert value(samples, "rebalance_monitor_last_batch_timestamp_seconds") == 1_700_000_124.0
    assert value(samples, "rebalance_monitor_batch_duration_seconds_count") == 2
    assert value(samples, "rebalance_monitor_batch_duration_seconds_sum") == 3.5
    assert value(samples, "rebalance_monitor_batch_duration_seconds_bucket", le="1.0") == 1
    assert value(samples, "rebalance_monitor_batch_duration_seconds_bucket", le="5.0") == 2
    assert value(samples, "rebalance_monitor_last_batch_age_seconds") == 0
    assert value(samples, "rebalance_monitor_kafka_up") is None  # not checked yet
    sink.record_kafka_check(False, 1_700_000_154.0)  # the broker is down, 30 s later
    samples = scrape(sink)
    assert value(samples, "rebalance_monitor_kafka_up") == 0
    assert value(samples, "rebalance_monitor_last_batch_age_seconds") == 30
    sink.record_kafka_check(True, 1_700_000_160.0)
    assert value(scrape(sink), "rebalance_monitor_kafka_up") == 1


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each rendering of the exposition from now on was kept against, in order."""
    render = _CachedExposition._render
    stamps: list[Any] = []

    def counted(self: Any, environ: Any, stamp: Any) -> Any:
        stamps.append(stamp)
        return render(self, environ, stamp)

    monkeypatch.setattr(_CachedExposition, "_render", counted)
    return stamps


def test_a_scrape_of_an_unchanged_store_is_served_from_its_last_rendering(
    sink: PrometheusSink, renders: list[Any]
) -> None:
    """Rendering is the cost of a scrape at many groups: the store renders once per change,
    whatever the number of scrapes, and every change is served."""
    sink.record_batch(1.0, 10, 0, 1_700_000_000.0, batch_id=0)
    first = [scrape(sink) for _ in range(3)]
    assert len(renders) == 1 and first[0] == first[1] == first[2]
    sink.record_batch(1.0, 5, 0, 1_700_000_001.0, batch_id=1)
    assert value(scrape(sink), "rebalance_monitor_input_rows_total") == 15
    assert value(scrape(sink), "rebalance_monitor_input_rows_total") == 15
    assert len(renders) == 2
    sink.record_kafka_check(True, 1_700_000_002.0)
    assert value(scrape(sink), "rebalance_monitor_kafka_up") == 1
    assert len(renders) == 3


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The metric names of the families built from now on, in order."""
    family = prometheus._family
    names: list[str] = []

    def counted(spec: mn.MetricSpec, values: Any) -> Any:
        names.append(spec.name)
        return family(spec, values)

    monkeypatch.setattr(prometheus, "_family", counted)
    return names


def test_a_family_is_built_again_only_when_its_metric_changed(
    sink: PrometheusSink, built: list[str]
) -> None:
    """Building every family is the cost of a scrape at many groups: a family is built once
    per change of its own series, and setting a value a series already has is no change."""
    sink.update([rebalance(1, [member("a", 0, 1)])])
    first = scrape(sink)
    assert mn.GENERATION.name in built and mn.KAFKA_UP.name in built
    built.clear()
    sink.record_kafka_check(True, 1_700_000_000.0)  # the job's series change, no group's
    second = scrape(sink)
    assert mn.KAFKA_UP.name in built and mn.GENERATION.name not in built
    assert value(second, "kafka_consumergroup_generation", **G) == 1
    assert {k: v for k, v in first.items() if k[0].startswith("kafka_consumergroup")} == {
        k: v for k, v in second.items() if k[0].startswith("kafka_consumergroup")
    }
    version = sink._store.version
    sink.record_kafka_check(True, 1_700_000_000.0)  # the same values again
    assert sink._store.version == version
    built.clear()
    sink.update([rebalance(2, [member("a", 0, 1), member("b", 2)])])
    assert value(scrape(sink), "kafka_consumergroup_generation", **G) == 2
    assert mn.GENERATION.name in built and mn.KAFKA_UP.name not in built


@pytest.mark.parametrize(
    ("accept", "encoding"),
    [
        (None, None),
        ("application/openmetrics-text; version=1.0.0", None),
        ("application/openmetrics-text; version=1.0.0", "gzip"),
        ("text/plain; version=0.0.4", "gzip"),
    ],
)
def test_the_whole_exposition_is_the_librarys_from_each_familys_kept_text(
    sink: PrometheusSink, accept: str | None, encoding: str | None
) -> None:
    """The whole exposition is put together from each family's text, kept until the family
    changes; it is byte for byte what prometheus_client's app renders, in each format."""
    import gzip

    from prometheus_client import make_wsgi_app

    sink.update([rebalance(1, [member("a", 0, 1)]), lag(0, 42, 3.5, at_ms=T0)])
    sink.record_batch(1.0, 10, 0, 1_700_000_000.0, batch_id=0)
    headers = {k: v for k, v in (("Accept", accept), ("Accept-Encoding", encoding)) if v}

    def ours() -> tuple[bytes, str | None, str | None]:
        req = urllib.request.Request(f"http://127.0.0.1:{sink.port}/metrics", headers=headers)
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.read(), resp.headers["Content-Type"], resp.headers["Content-Encoding"]

    def library() -> tuple[bytes, str | None, str | None]:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics", "QUERY_STRING": ""}
        environ |= {"HTTP_ACCEPT": accept or "", "HTTP_ACCEPT_ENCODING": encoding or ""}
        answer: dict[str, str] = {}
        body = b"".join(make_wsgi_app(sink.registry)(environ, lambda status, hs: answer.update(hs)))
        return body, answer.get("Content-Type"), answer.get("Content-Encoding")

    def plain(answer: tuple[bytes, str | None, str | None]) -> tuple[bytes, str | None]:
        body, content_type, content_encoding = answer
        return (gzip.decompress(body) if content_encoding else body), content_type

    assert plain(ours()) == plain(library())
    assert ours()[2] == library()[2]
    sink.record_kafka_check(True, 1_700_000_030.0)  # one family changed, the others kept
    sink.update([lag(0, 40, 2.0, at_ms=T0 + 1)])
    assert plain(ours()) == plain(library())


def test_a_scrape_restricted_by_name_builds_only_that_family(
    sink: PrometheusSink, built: list[str]
) -> None:
    """``/metrics?name[]=...`` (what bench/live.py polls every 50 ms) builds the families
    asked for, not every family of 10,000 groups."""
    sink.update([rebalance(1, [member("a", 0, 1)])])
    url = f"http://127.0.0.1:{sink.port}/metrics?name[]=kafka_consumergroup_generation"
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    names = {f.name for f in text_string_to_metric_families(text)}
    assert names == {"kafka_consumergroup_generation"}
    assert built == ["kafka_consumergroup_generation"]


def test_a_restricted_scrape_is_rendered_again_only_when_its_families_change(
    renders: list[Any],
) -> None:
    """The ages set before each scrape change the store at every scrape; a scrape of
    ``name[]=kafka_consumergroup_generation`` is still rendered once per change of the
    generations, and serves each change."""
    clock = iter(range(1_700_000_000, 1_700_001_000))
    s = PrometheusSink(max_remembered_events=1000, clock=lambda: float(next(clock)))
    s.start(port=0)
    url = f"http://127.0.0.1:{s.port}/metrics?name[]=kafka_consumergroup_generation"

    def generations() -> list[float]:
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
        return [x.value for f in text_string_to_metric_families(text) for x in f.samples]

    try:
        s.record_sources(CLUSTER, [source_stats(0, max_ts_ms=T0)])  # an age to refresh
        s.update([rebalance(1, [member("a", 0, 1)])])
        assert [generations() for _ in range(3)] == [[1.0]] * 3
        assert len(renders) == 1
        s.update([rebalance(2, [member("a", 0, 1)])])
        assert generations() == [2.0]
        assert len(renders) == 2
        assert value(scrape(s), "rebalance_monitor_exporter_series") is not None  # whole: apart
        assert generations() == [2.0]
        assert len(renders) == 3
    finally:
        s.stop()


def test_scrapes_during_a_rendering_wait_for_it(
    sink: PrometheusSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scrape loop faster than a rendering (at many groups) gets one rendering per change,
    not one per scrape in flight."""
    import threading
    import time

    render = _CachedExposition._render
    renders: list[int] = []

    def slow(self: Any, environ: Any, version: int) -> Any:
        renders.append(version)
        time.sleep(0.3)
        return render(self, environ, version)

    monkeypatch.setattr(_CachedExposition, "_render", slow)
    sink.record_batch(1.0, 7, 0, 1_700_000_000.0, batch_id=0)
    seen: list[float | None] = []
    scrapers = [
        threading.Thread(
            target=lambda: seen.append(value(scrape(sink), "rebalance_monitor_input_rows_total"))
        )
        for _ in range(6)
    ]
    for t in scrapers:
        t.start()
    for t in scrapers:
        t.join()
    assert seen == [7] * 6
    assert len(renders) == 1


def test_record_batch_ignores_a_replayed_batch_id(sink: PrometheusSink) -> None:
    sink.record_batch(1.0, 10, 1, 1.0, batch_id=4)
    sink.record_batch(1.0, 10, 1, 1.0, batch_id=4)
    sink.record_batch(1.0, 5, 0, 2.0, batch_id=5)
    samples = scrape(sink)
    assert value(samples, "rebalance_monitor_input_rows_total") == 15
    assert value(samples, "rebalance_monitor_bad_records_total") == 1
    assert value(samples, "rebalance_monitor_batches_total") == 2


def test_rebalance_event_sets_counters_gauges_and_histogram(sink: PrometheusSink) -> None:
    a, b = member("m-a", 0, 1, client_id="ca"), member("m-b", 2, client_id="cb")
    assert sink.update([rebalance(1, [a, b], moved=2, revoked=1, duration_ms=1500)]) == 1
    s = scrape(sink)
    assert value(s, "kafka_consumergroup_rebalances_total", **G, cause="join") == 1
    assert value(s, "kafka_consumergroup_partitions_moved_total", **G) == 2
    assert value(s, "kafka_consumergroup_partitions_revoked_total", **G) == 1
    assert value(s, "kafka_consumergroup_generation", **G) == 1
    assert value(s, "kafka_consumergroup_members", **G) == 2
    assert value(s, "kafka_consumergroup_assignment_skew_partitions", **G) == 1
    assert value(s, "kafka_consumergroup_last_rebalance_timestamp_seconds", **G) == (
        (T0 + 1000) / 1000
    )
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_sum", **G) == 1.5
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_count", **G) == 1
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_bucket", **G, le="1.0") == 0
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_bucket", **G, le="2.5") == 1
    name = "kafka_consumergroup_member_assigned_partitions"
    assert value(s, name, **G, member="m-a", client_id="ca") == 2
    assert value(s, name, **G, member="m-b", client_id="cb") == 1


def test_departed_members_lose_their_series(sink: PrometheusSink) -> None:
    a, b = member("m-a", 0, 1), member("m-b", 2)
    sink.update([rebalance(1, [a, b])])
    sink.update([rebalance(2, [member("m-a", 0, 1, 2)], cause="crash")])
    s = scrape(sink)
    name = "kafka_consumergroup_member_assigned_partitions"
    assert value(s, name, **G, member="m-a", client_id="c") == 3
    assert value(s, name, **G, member="m-b", client_id="c") is None
    assert value(s, "kafka_consumergroup_rebalances_total", **G, cause="crash") == 1
    assert value(s, "kafka_consumergroup_members", **G) == 1


def test_an_older_generation_counts_but_does_not_rewind_gauges(sink: PrometheusSink) -> None:
    sink.update([rebalance(5, [member("m-a", 0)])])
    sink.update([rebalance(4, [member("m-a", 0), member("m-b", 1)])])
    s = scrape(sink)
    assert value(s, "kafka_consumergroup_generation", **G) == 5
    assert value(s, "kafka_consumergroup_members", **G) == 1
    assert value(s, "kafka_consumergroup_rebalances_total", **G, cause="join") == 2


def test_group_metrics_per_strategy(sink: PrometheusSink) -> None:
    sink.update(
        [
            metrics_row(3, "actual", ratio=1.5, spread=2),
            metrics_row(3, "range", ratio=1.5, divergent=False),
            metrics_row(3, "roundrobin", ratio=1.0, divergent=True),
            metrics_row(3, "cooperative-sticky", error="too big"),
            metrics_row(3, "sticky", divergent=None),
        ]
    )
    s = scrape(sink)
    ratio = "kafka_consumergroup_assignment_imbalance_ratio"
    div = "kafka_consumergroup_assignment_divergent"
    assert value(s, ratio, **G, strategy="actual") == 1.5
    assert value(s, ratio, **G, strategy="roundrobin") == 1.0
    assert value(s, ratio, **G, strategy="cooperative-sticky") is None
    assert value(s, div, **G, strategy="range") == 0
    assert value(s, div, **G, strategy="roundrobin") == 1
    assert value(s, div, **G, strategy="actual") is None
    assert value(s, div, **G, strategy="sticky") is None
    assert value(s, div, **G, strategy="cooperative-sticky") is None
    assert value(s, "kafka_consumergroup_assignment_skew_partitions", **G) == 2
    # The strategy fails at the next rebalance: its series go.
    sink.update([metrics_row(4, "roundrobin", error="boom")])
    s = scrape(sink)
    assert value(s, ratio, **G, strategy="roundrobin") is None
    assert value(s, div, **G, strategy="roundrobin") is None


def test_group_status_state_set_and_gauges(sink: PrometheusSink) -> None:
    sink.update([status(T0, "PreparingRebalance", generation=3, members=4)])
    s = scrape(sink)
    state = "kafka_consumergroup_state"
    assert value(s, state, **G, state="PreparingRebalance") == 1
    assert value(s, state, **G, state="Stable") == 0
    assert {lbl for (n, lbl) in s if n == state} == {
        frozenset({**G, "state": st}.items()) for st in mn.GROUP_STATES
    }
    assert value(s, "kafka_consumergroup_generation", **G) == 3
    assert value(s, "kafka_consumergroup_members", **G) == 4
    # A newer status wins; an older one (out of order) is ignored.
    sink.update([status(T0 + 10, "Stable", generation=4), status(T0 + 5, "Empty", members=0)])
    s = scrape(sink)
    assert value(s, state, **G, state="Stable") == 1
    assert value(s, state, **G, state="PreparingRebalance") == 0
    assert value(s, state, **G, state="Empty") == 0
    assert value(s, "kafka_consumergroup_generation", **G) == 4
    assert value(s, "kafka_consumergroup_members", **G) == 2


def test_an_unknown_state_gets_its_own_series_while_current(sink: PrometheusSink) -> None:
    state = "kafka_consumergroup_state"
    sink.update([status(T0, "Frozen")])
    assert value(scrape(sink), state, **G, state="Frozen") == 1
    sink.update([status(T0 + 1, "Stable")])
    s = scrape(sink)
    assert value(s, state, **G, state="Frozen") is None
    assert value(s, state, **G, state="Stable") == 1


def test_lag_series_and_their_removal(sink: PrometheusSink) -> None:
    sink.update([lag(0, 42, 3.5, at_ms=T0), lag(1, 7, None, at_ms=T0)])
    s = scrape(sink)
    p0 = {**G, "topic": "t", "partition": "0"}
    p1 = {**G, "topic": "t", "partition": "1"}
    assert value(s, "kafka_consumergroup_lag", **p0) == 42
    assert value(s, "kafka_consumergroup_lag_seconds", **p0) == 3.5
    assert value(s, "kafka_consumergroup_lag", **p1) == 7
    assert value(s, "kafka_consumergroup_lag_seconds", **p1) is None
    # Older measurement ignored; offset tombstone removes the partition's series.
    sink.update([lag(0, 1, 0.1, at_ms=T0 - 5), offset_tombstone(1, at_ms=T0 + 1)])
    s = scrape(sink)
    assert value(s, "kafka_consumergroup_lag", **p0) == 42
    assert value(s, "kafka_consumergroup_lag", **p1) is None
    # A lag row measured before the tombstone does not bring it back.
    sink.update([lag(1, 9, 1.0, at_ms=T0)])
    assert value(scrape(sink), "kafka_consumergroup_lag", **p1) is None


def test_lag_status_codes_per_partition_and_group(sink: PrometheusSink) -> None:
    p0 = {**G, "topic": "t", "partition": "0"}
    sink.update([lag(0, 42, 3.5, at_ms=T0, status="STOP"), status(T0, lag_status="ERR")])
    s = scrape(sink)
    assert value(s, "kafka_consumergroup_partition_status", **p0) == 4  # Burrow's STOP
    assert value(s, "kafka_consumergroup_status", **G) == 3  # ERR
    sink.update([lag(0, 0, 0.0, at_ms=T0 + 1, status="OK"), status(T0 + 1, lag_status="OK")])
    s = scrape(sink)
    assert value(s, "kafka_consumergroup_partition_status", **p0) == 1
    assert value(s, "kafka_consumergroup_status", **G) == 1
    # no verdict: the series go; an offset tombstone removes the partition's
    sink.update([status(T0 + 2, lag_status=None), offset_tombstone(0, at_ms=T0 + 3)])
    s = scrape(sink)
    assert value(s, "kafka_consumergroup_status", **G) is None
    assert value(s, "kafka_consumergroup_partition_status", **p0) is None


def test_whatif_counters_sum_the_metrics_rows_once(sink: PrometheusSink) -> None:
    rows = [
        metrics_row(1, "actual", moved=2, paused=3, paused_seconds=1.5),
        metrics_row(1, "range", moved=2, paused=3, paused_seconds=1.5),
        metrics_row(1, "cooperative-sticky", moved=1, paused=1, paused_seconds=0.5),
        metrics_row(2, "cooperative-sticky", moved=2, paused=2, paused_seconds=4.0),
        metrics_row(2, "sticky", error="boom", moved=9, paused=9, paused_seconds=9.0),
    ]
    sink.update(rows)
    sink.update(rows)  # a replayed batch counts once
    sink.update([metrics_row(0, "cooperative-sticky", moved=1, paused=1, paused_seconds=0.25)])
    s = scrape(sink)
    paused = "kafka_consumergroup_whatif_paused_partition_seconds_total"
    moved = "kafka_consumergroup_whatif_partitions_moved_total"
    assert value(s, paused, **G, strategy="actual") == 1.5
    # an older generation still counts: the counters sum every rebalance
    assert value(s, paused, **G, strategy="cooperative-sticky") == 4.75
    assert value(s, moved, **G, strategy="cooperative-sticky") == 4
    assert value(s, paused, **G, strategy="sticky") is None  # a failed strategy: no figure


def test_a_group_whose_last_series_is_removed_keeps_no_entry(sink: PrometheusSink) -> None:
    sink.update([lag(0, 42, 3.5, at_ms=T0)])
    assert sink._store.has_group((CLUSTER, GROUP))
    sink.update([lag(0, None, None, at_ms=T0 + 1)])  # both of its series go
    assert value(scrape(sink), "kafka_consumergroup_lag", **G, topic="t", partition="0") is None
    assert not sink._store.has_group((CLUSTER, GROUP))


def tracked(bucket: str, groups: int, *, at_ms: int) -> TrackedGroups:
    return TrackedGroups(
        event_id=event_id("tracked", CLUSTER, bucket, at_ms),
        cluster=CLUSTER,
        group_id=bucket,
        event_ts_ms=at_ms,
        groups=groups,
    )


def test_tracked_groups_is_the_sum_of_each_buckets_newest_count(sink: PrometheusSink) -> None:
    assert value(scrape(sink), "rebalance_monitor_tracked_groups") is None  # none seen yet
    sink.update([tracked("b0", 3, at_ms=T0), tracked("b1", 5, at_ms=T0)])
    assert value(scrape(sink), "rebalance_monitor_tracked_groups") == 8
    sink.update([to_row(tracked("b0", 1, at_ms=T0 + 10))])  # a bucket forgot two (as a dict)
    assert value(scrape(sink), "rebalance_monitor_tracked_groups") == 6
    sink.update([tracked("b1", 9, at_ms=T0 - 10)])  # older than the bucket's count: ignored
    assert value(scrape(sink), "rebalance_monitor_tracked_groups") == 6
    assert names_with(scrape(sink), group="b0") == set()  # a bucket is not a group


def test_a_forgotten_group_loses_every_series(sink: PrometheusSink) -> None:
    sink.update([rebalance(1, [member("m-a", 0)]), status(T0 + 2000), lag(0, 5, 1.0, at_ms=T0)])
    assert names_with(scrape(sink), group=GROUP)
    gone = dataclasses.replace(
        deleted(T0 + 9000), reason="forgotten", source_partition=-1, source_offset=-1
    )
    sink.update([gone])
    assert names_with(scrape(sink), group=GROUP) == set()


def test_the_deleted_groups_remembered_are_bounded() -> None:
    small = PrometheusSink(max_remembered_events=2)
    for i in range(5):
        small.update([rebalance(1, [member("m", 0)], group=f"g{i}"), deleted(T0 + i, f"g{i}")])
    assert list(small._deleted_ts_ms) == [(CLUSTER, "g3"), (CLUSTER, "g4")]
    assert small._dormant == {(CLUSTER, "g3"), (CLUSTER, "g4")}


def test_group_deleted_removes_every_series_of_the_group(sink: PrometheusSink) -> None:
    other = rebalance(1, [member("x", 0)], group="other")
    sink.update(
        [
            rebalance(1, [member("m-a", 0, 1), member("m-b", 2)]),
            metrics_row(1, "actual"),
            metrics_row(1, "roundrobin"),
            status(T0 + 2000),
            lag(0, 5, 1.0, at_ms=T0 + 2000),
            other,
        ]
    )
    assert names_with(scrape(sink), group=GROUP)
    sink.update([deleted(T0 + 3000)])
    s = scrape(sink)
    assert names_with(s, group=GROUP) == set()
    assert (
        value(
            s, "kafka_consumergroup_rebalances_total", cluster=CLUSTER, group="other", cause="join"
        )
        == 1
    )
    # Late events from before the tombstone do not resurrect the group.
    sink.update([status(T0 + 2500), lag(1, 5, 1.0, at_ms=T0 + 2500)])
    assert names_with(scrape(sink), group=GROUP) == set()
    # Nor do the offset tombstones and the status closing the tombstone's batch.
    sink.update([offset_tombstone(0, at_ms=T0 + 3000), status(T0 + 3000, "Dead", members=0)])
    assert names_with(scrape(sink), group=GROUP) == set()
    # A group recreated after the tombstone starts afresh.
    sink.update([rebalance(1, [member("m-c", 0)], ts_ms=T0 + 4000, offset=5000)])
    sink.update([status(T0 + 4000, "Stable", members=1)])
    s = scrape(sink)
    assert value(s, "kafka_consumergroup_generation", **G) == 1
    assert value(s, "kafka_consumergroup_rebalances_total", **G, cause="join") == 1
    assert value(s, "kafka_consumergroup_members", **G) == 1
    assert value(s, "kafka_consumergroup_state", **G, state="Stable") == 1


ASSIGNOR = "kafka_consumergroup_assignor_info"


def assignors(s: Samples, group: str = GROUP) -> dict[tuple[str, str, str], float]:
    """(strategy, rebalance_protocol, group_protocol) -> value of the group's info series."""
    out = {}
    for (name, labels), v in s.items():
        lbl = dict(labels)
        if name == ASSIGNOR and lbl["group"] == group:
            assert set(lbl) == {
                "cluster",
                "group",
                "strategy",
                "rebalance_protocol",
                "group_protocol",
            }
            out[(lbl["strategy"], lbl["rebalance_protocol"], lbl["group_protocol"])] = v
    return out


IMPLEMENTATION = "kafka_consumergroup_assignor_implementation_info"


def implementations(s: Samples) -> dict[tuple[str, str], float]:
    """(strategy, implementation) -> value of the group's implementation info series."""
    return {
        (dict(labels)["strategy"], dict(labels)["implementation"]): v
        for (name, labels), v in s.items()
        if name == IMPLEMENTATION and dict(labels)["group"] == GROUP
    }


def test_implementation_info_follows_the_last_rebalance(sink: PrometheusSink) -> None:
    """Set from the own strategy's implementation, replaced when another matches, gone
    when none matches."""
    sink.update([rebalance(1, [member("m-a", 0, 1)], own="range")])
    assert implementations(scrape(sink)) == {("range", "java"): 1}
    librdkafka = dataclasses.replace(
        rebalance(2, [member("m-a", 0, 1)], own="range"), own_strategy_implementation="librdkafka"
    )
    sink.update([librdkafka])
    assert implementations(scrape(sink)) == {("range", "librdkafka"): 1}
    none = dataclasses.replace(
        rebalance(3, [member("m-a", 0, 1)], own="range"), own_strategy_implementation=None
    )
    sink.update([none])
    assert implementations(scrape(sink)) == {}


def test_assignor_info_names_the_own_strategy(sink: PrometheusSink) -> None:
    sink.update([rebalance(1, [member("m-a", 0, 1)], own="range")])
    assert assignors(scrape(sink)) == {("range", "eager", "classic"): 1}


def test_assignor_info_takes_the_name_of_the_own_expected_assignment(
    sink: PrometheusSink,
) -> None:
    """The ``strategy`` label the divergent series carry: a KIP-848 ``range`` server
    assignor is ``server-range`` there, whether the own expected assignment says so or (a
    static rejoin without expected assignments) the event's ``strategy`` does."""

    def kip848(generation: int, m: MemberInfo, **kw: Any) -> RebalanceEvent:
        return rebalance(
            generation,
            [m],
            strategy="range",
            rebalance_protocol="cooperative",
            group_protocol="consumer",
            **kw,
        )

    sink.update([to_row(kip848(1, member("m-a", 0), own="server-range"))])
    assert assignors(scrape(sink)) == {("server-range", "cooperative", "consumer"): 1}
    sink.update([dataclasses.replace(kip848(1, member("m-b", 0), offset=500), expected=())])
    assert assignors(scrape(sink)) == {("server-range", "cooperative", "consumer"): 1}


def test_a_changed_strategy_or_protocol_replaces_the_assignor_series(
    sink: PrometheusSink,
) -> None:
    a = member("m-a", 0, 1)
    sink.update([rebalance(1, [a], own="range")])
    sink.update([rebalance(2, [a], own="cooperative-sticky", strategy="cooperative-sticky")])
    assert assignors(scrape(sink)) == {("cooperative-sticky", "eager", "classic"): 1}
    sink.update(
        [
            rebalance(
                3,
                [a],
                own="cooperative-sticky",
                strategy="cooperative-sticky",
                rebalance_protocol="cooperative",
            )
        ]
    )
    assert assignors(scrape(sink)) == {("cooperative-sticky", "cooperative", "classic"): 1}
    # A classic group that went empty has no strategy: no series.
    sink.update([rebalance(4, [], strategy=None, cause="graceful_leave")])
    assert assignors(scrape(sink)) == {}
    sink.update([rebalance(5, [a], own="range")])
    assert assignors(scrape(sink)) == {("range", "eager", "classic"): 1}


def test_stale_and_replayed_rows_do_not_bring_back_an_old_strategy() -> None:
    sink = PrometheusSink(max_remembered_events=1)  # replays are not recognised as such
    a = member("m-a", 0, 1)
    old = rebalance(5, [a], own="range")
    new = rebalance(6, [a], own="cooperative-sticky", strategy="cooperative-sticky")
    want = {("cooperative-sticky", "eager", "classic"): 1}

    def now() -> dict[tuple[str, str, str], float]:
        return assignors(
            {
                (s.name, frozenset(s.labels.items())): s.value
                for family in sink.registry.collect()
                for s in family.samples
            }
        )

    sink.update(
        [
            old,
            status(T0 + 5000, generation=5),
            new,
            status(T0 + 6000, generation=6, strategy="cooperative-sticky"),
        ]
    )
    assert now() == want
    # The older generation replayed (or arriving late under another id): ignored.
    sink.update([old])
    sink.update([dataclasses.replace(old, event_id="rebalance/late")])
    assert now() == want
    # An older status, replayed: ignored.
    sink.update([status(T0 + 5000, generation=5)])
    assert now() == want
    # Once a rebalance has set it, a status does not change it (even a newer one).
    sink.update([status(T0 + 7000, generation=6)])
    assert now() == want


def test_group_status_sets_the_assignor_until_a_rebalance_is_seen(sink: PrometheusSink) -> None:
    """After an exporter restart a stable group shows its strategy from its status."""
    sink.update(
        [
            status(
                T0, strategy="uniform", rebalance_protocol="cooperative", group_protocol="consumer"
            )
        ]
    )
    assert assignors(scrape(sink)) == {("uniform", "cooperative", "consumer"): 1}
    sink.update(
        [
            status(
                T0 + 1,
                strategy="range",
                rebalance_protocol="cooperative",
                group_protocol="consumer",
            )
        ]
    )
    assert assignors(scrape(sink)) == {("server-range", "cooperative", "consumer"): 1}
    # A status without a strategy leaves it as it is.
    sink.update([status(T0 + 2, strategy=None, rebalance_protocol=None, group_protocol="consumer")])
    assert assignors(scrape(sink)) == {("server-range", "cooperative", "consumer"): 1}
    sink.update([rebalance(2, [member("m-a", 0)], own="range")])
    assert assignors(scrape(sink)) == {("range", "eager", "classic"): 1}


def test_group_deleted_removes_the_assignor_series(sink: PrometheusSink) -> None:
    sink.update(
        [
            rebalance(1, [member("m-a", 0)], own="range"),
            rebalance(1, [member("x", 0)], group="other", own="range"),
        ]
    )
    sink.update([deleted(T0 + 3000)])
    s = scrape(sink)
    assert assignors(s) == {}
    assert assignors(s, group="other") == {("range", "eager", "classic"): 1}
    # Rows from before the tombstone, and the status closing its batch, do not bring it back.
    sink.update([status(T0 + 2500), status(T0 + 3000, "Dead", members=0)])
    assert assignors(scrape(sink)) == {}
    # The recreated group shows its new strategy only.
    sink.update(
        [
            rebalance(
                1, [member("m-c", 0)], ts_ms=T0 + 4000, offset=5000, own="sticky", strategy="sticky"
            )
        ]
    )
    assert assignors(scrape(sink)) == {("sticky", "eager", "classic"): 1}


def test_applying_the_same_batch_twice_counts_once(sink: PrometheusSink) -> None:
    batch = [
        rebalance(1, [member("m-a", 0, 1), member("m-b", 2)], moved=3, revoked=2),
        rebalance(2, [member("m-a", 0, 1, 2)], moved=1, revoked=0, cause="crash"),
        status(T0 + 3000),
        lag(0, 5, 1.0, at_ms=T0 + 3000),
    ]
    assert sink.update(batch) == 4
    assert sink.update(batch) == 0
    assert sink.update([to_row(e) for e in batch]) == 0  # as dicts, too
    s = scrape(sink)
    assert value(s, "kafka_consumergroup_rebalances_total", **G, cause="join") == 1
    assert value(s, "kafka_consumergroup_rebalances_total", **G, cause="crash") == 1
    assert value(s, "kafka_consumergroup_partitions_moved_total", **G) == 4
    assert value(s, "kafka_consumergroup_partitions_revoked_total", **G) == 2
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_count", **G) == 2


def test_lag_rows_do_not_push_the_counted_ids_out() -> None:
    """Lag rows are not among the remembered ids (a repeat sets the same values): a group
    count's worth of them between a batch and its replay still finds the rebalance a repeat."""
    sink = PrometheusSink(max_remembered_events=2)
    sink.start(port=0)
    try:
        first = rebalance(1, [member("m-a", 0, 1)], moved=2, revoked=0)
        lags = [to_row(lag(p, p, 0.5, at_ms=T0 + 1000)) for p in range(10)]
        assert sink.update([first, *lags]) == 11
        assert sink.update([first, *lags]) == 0
        s = scrape(sink)
    finally:
        sink.stop()
    assert value(s, "kafka_consumergroup_rebalances_total", **G, cause="join") == 1
    assert value(s, "kafka_consumergroup_lag", **G, topic="t", partition="9") == 9


def test_lag_columns_give_what_the_rows_give() -> None:
    from streaming.sinks.prometheus import LAG_COLUMNS

    rows = [
        lag(0, 5, 1.0, at_ms=T0 + 1000, status="OK"),
        lag(1, None, None, at_ms=T0 + 1000),
        lag(0, 9, 2.0, at_ms=T0 + 2000, status="WARN"),
        lag(0, 7, 1.5, at_ms=T0 + 1500, status="OK"),  # older than the last: not taken
    ]
    by_rows, by_columns = PrometheusSink(), PrometheusSink()
    assert by_rows.update(rows) == 3
    dicts = [to_row(r) for r in rows]
    assert by_columns.update_lag({c: [d[c] for d in dicts] for c in LAG_COLUMNS}) == 3
    assert _registry_samples(by_columns) == _registry_samples(by_rows)
    samples = _registry_samples(by_columns)
    assert any("partition_status" in k[0] for k in samples)


def test_group_metrics_columns_give_what_the_rows_give() -> None:
    """Random sequences of rebalances, group metrics (errors, infinite ratios, repeats, older
    generations), statuses and deletions: each run of group metrics rows applied as columns
    between the other rows as rows gives the series that all of them as rows give."""
    import random

    from streaming.sinks.prometheus import GROUP_METRICS_COLUMNS

    rnd = random.Random(20261130)
    for _ in range(200):
        events: list[Any] = []
        for _ in range(rnd.randint(1, 25)):
            generation = rnd.randint(1, 6)
            pick = rnd.random()
            if pick < 0.2:
                events.append(rebalance(generation, [member("m-a", 0), member("m-b", 1, 2)]))
            elif pick < 0.3:
                events.append(status(T0 + rnd.randint(0, 9_000), generation=generation))
            elif pick < 0.35:
                events.append(deleted(T0 + rnd.randint(0, 9_000)))
            elif pick < 0.4 and events:
                events.append(rnd.choice(events))  # a repeat
            else:
                events.append(
                    metrics_row(
                        generation,
                        rnd.choice(["actual", "range", "roundrobin", "sticky"]),
                        ratio=rnd.choice([1.0, 1.5, math.inf]),
                        divergent=rnd.choice([True, False, None]),
                        error=rnd.choice([None, None, None, "failed"]),
                        spread=rnd.randint(0, 3),
                        moved=rnd.randint(0, 4),
                        paused_seconds=rnd.random(),
                    )
                )
        by_rows, by_columns = PrometheusSink(), PrometheusSink()
        expected = by_rows.update(events)
        applied = 0
        for is_metrics, run in itertools.groupby(events, lambda e: isinstance(e, GroupMetricsRow)):
            rows = [to_row(e) for e in run]
            if is_metrics:
                columns = {c: [r[c] for r in rows] for c in GROUP_METRICS_COLUMNS}
                applied += by_columns.update_group_metrics(columns)
            else:
                applied += by_columns.update(rows)
        assert applied == expected
        assert _registry_samples(by_columns) == _registry_samples(by_rows)


def test_update_accepts_to_row_dicts() -> None:
    sink = PrometheusSink()
    row = to_row(rebalance(1, [member("m-a", 0)]))
    assert sink.update([row, {"kind": "something_else"}]) == 1


def test_remembered_ids_are_bounded() -> None:
    sink = PrometheusSink(max_remembered_events=2)
    events = [rebalance(g, [member("m-a", 0)]) for g in (1, 2, 3)]
    assert sink.update(events) == 3
    assert sink.update(events[2:]) == 0  # still remembered
    assert sink.update(events[:1]) == 1  # forgotten: the bound is what it costs
    with pytest.raises(ValueError):
        PrometheusSink(max_remembered_events=0)


def test_each_sink_has_its_own_registry() -> None:
    one, two = PrometheusSink(), PrometheusSink()
    one.update([rebalance(1, [member("m-a", 0)])])
    assert one.registry is not two.registry
    assert two.registry.get_sample_value("kafka_consumergroup_generation", G) is None
    assert one.registry.get_sample_value("kafka_consumergroup_generation", G) == 1


# -- naming conventions ---------------------------------------------------------------------

_UNIT_SUFFIXES = ("_seconds", "_partitions", "_ratio", "_total")
_NOT_BASE_UNITS = re.compile(r"_(ms|milliseconds|minutes|hours|percent|bytes_kb|mb)(_|$)")


@pytest.mark.parametrize("spec", mn.ALL_METRICS, ids=lambda s: s.name)
def test_metric_naming_conventions(spec: mn.MetricSpec) -> None:
    assert spec.name.startswith(("kafka_consumergroup_", "rebalance_monitor_"))
    assert re.fullmatch(r"[a-z][a-z0-9_]*", spec.name)
    assert (spec.type == "counter") == spec.name.endswith("_total")
    assert not _NOT_BASE_UNITS.search(spec.name)
    assert spec.help.strip()
    if spec.name.startswith("kafka_consumergroup_"):
        assert spec.labels[:2] == ("cluster", "group")
    if "topic" in spec.labels or "partition" in spec.labels:
        # a group's partition, or (the job's own) a partition of a topic the job reads
        wanted = mn.PARTITION_LABELS if "group" in spec.labels else mn.SOURCE_LABELS
        assert spec.labels == wanted
    if spec.type == "histogram":
        assert spec.buckets == tuple(sorted(spec.buckets)) and spec.buckets
        assert spec.name.endswith("_seconds")
    else:
        assert spec.buckets == ()
    if "duration" in spec.name or "timestamp" in spec.name or "lag_seconds" in spec.name:
        assert spec.name.endswith(_UNIT_SUFFIXES)


def test_metric_names_are_unique_and_all_exposed(sink: PrometheusSink) -> None:
    names = [spec.name for spec in mn.ALL_METRICS]
    assert len(names) == len(set(names))
    sink.record_batch(0.1, 1, 0, 1.0)
    sink.record_kafka_check(True, 2.0)
    sink.update(
        [
            rebalance(1, [member("m-a", 0)], own="range"),
            metrics_row(1, "actual"),
            metrics_row(1, "range"),
            status(T0 + 2000, lag_status="WARN"),
            lag(0, 5, 1.0, at_ms=T0 + 2000, status="WARN"),
            tracked("bucket-0", 3, at_ms=T0),
        ]
    )
    sink.expect_cluster(CLUSTER, 1.0)
    sink.record_sources(CLUSTER, [source_stats(0, max_ts_ms=T0)])
    sink.record_progress(2.0, [("__consumer_offsets", 0, 10, 12)])
    sink.record_rows_written("partition_lag", 1)
    sink.record_trigger_interval(1.0)
    exposed = {name for name, _ in scrape(sink)}
    for spec in mn.ALL_METRICS:
        wanted = spec.name + ("_count" if spec.type == "histogram" else "")
        assert wanted in exposed, spec.name


def _registry_samples(sink: PrometheusSink) -> dict[tuple[str, frozenset[Any]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in sink.registry.collect()
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_the_drivers_summary_rows_give_the_same_series_as_the_full_rows() -> None:
    """The job hands the exporter a rebalance as its summary (no expected partition lists):
    every series of every golden capture must be what the full rows give."""
    import json

    from streaming.sinks.micro_batch import driver_row
    from streaming.spark.step_rows import event_row, events_to_rows
    from streaming.tracking.events import RebalanceEvent, RebalanceSummary, from_row
    from tests.unit.streaming.tracking.test_golden import FIXTURES
    from tests.unit.streaming.tracking.test_golden import run as track_golden

    full, summary = PrometheusSink(), PrometheusSink()
    rebalances = 0
    for name in FIXTURES:
        _state, events = track_golden(name)
        whole = [to_row(e) for e in events]
        rows = events_to_rows(events)
        assert rows == [event_row(r) for r in whole]  # the summary rebuilt from the row
        full.update(whole)
        summary.update([d for d in map(driver_row, rows) if d is not None])
        small = [
            (r, w) for r, w in zip(rows, whole, strict=True) if r["rebalance_summary"] is not None
        ]
        rebalances += len(small)
        # the summary carries none of the lists only Delta keeps
        assert all(
            len(json.dumps(r["rebalance_summary"])) < len(json.dumps(w, default=str))
            for r, w in small
            if any(x["assignment"] for x in w["expected"])
        )
        assert all(r["kind"] == "rebalance" for r, _ in small)
        summaries = [r["rebalance_summary"] for r, _ in small]
        assert {x["kind"] for x in summaries} == {"rebalance_summary"}
        assert [from_row(RebalanceSummary, x) for x in summaries] == [
            RebalanceSummary.of(e) for e in events if isinstance(e, RebalanceEvent)
        ]
        # the driver reads each kind from its typed struct only: no JSON column is left
        assert not [c for c in rows[0] if c in ("payload", "summary")]
    assert rebalances > 20
    assert _registry_samples(summary) == _registry_samples(full)
    assert full.groups == summary.groups == len(FIXTURES)


# -- the inputs' freshness and the job's own lag ----------------------------------------------


def source_stats(
    partition: int,
    *,
    max_ts_ms: int,
    topic: str = "__consumer_offsets",
    snapshot_ts_ms: int | None = None,
    end_offsets_ts_ms: int | None = None,
) -> dict[str, Any]:
    """A source-stats struct as the decode step writes it."""
    return {
        "topic": topic,
        "partition": partition,
        "lo": 0,
        "hi": 9,
        "records": 10,
        "unrouted": 0,
        "bad": 0,
        "max_ts_ms": max_ts_ms,
        "snapshot_ts_ms": snapshot_ts_ms,
        "end_offsets_ts_ms": end_offsets_ts_ms,
    }


class Clock:
    def __init__(self, now_s: float) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def clocked() -> Iterator[tuple[PrometheusSink, Clock]]:
    clock = Clock(T0 / 1000)
    # the lag series' bound: 60 s, the end offsets' max age plus the export interval
    s = PrometheusSink(end_offsets_max_age_s=50, lag_export_interval_s=10, clock=clock)
    s.start(port=0)
    try:
        yield s, clock
    finally:
        s.stop()


def test_input_ages_count_from_the_start_then_from_the_newest_snapshot_read(
    clocked: tuple[PrometheusSink, Clock],
) -> None:
    sink, clock = clocked
    m = "membership"
    snap_age, ends_age = mn.MEMBERSHIP_SNAPSHOT_AGE_SECONDS.name, mn.END_OFFSETS_AGE_SECONDS.name
    record_age = mn.SOURCE_RECORD_AGE_SECONDS.name
    sink.expect_cluster(CLUSTER, T0 / 1000)
    clock.now_s += 30  # nothing read for 30 s since the start
    samples = scrape(sink)
    assert value(samples, snap_age, cluster=CLUSTER) == 30
    assert value(samples, ends_age, cluster=CLUSTER) == 30
    sink.record_sources(
        CLUSTER,
        [
            source_stats(0, max_ts_ms=T0 + 20_000),
            source_stats(3, topic=m, max_ts_ms=T0 + 29_000, snapshot_ts_ms=T0 + 28_000),
            source_stats(3, topic=m, max_ts_ms=T0 + 25_000, end_offsets_ts_ms=T0 + 24_000),
        ],
    )
    clock.now_s += 2.5  # ages grow between batches: computed at the scrape
    samples = scrape(sink)
    assert value(samples, snap_age, cluster=CLUSTER) == 4.5
    assert value(samples, ends_age, cluster=CLUSTER) == 8.5
    assert value(samples, record_age, topic="__consumer_offsets", partition=0) == 12.5
    assert value(samples, record_age, topic=m, partition=3) == 3.5  # the newest of the two
    sink.record_sources(CLUSTER, [source_stats(0, max_ts_ms=T0 + 1_000)])  # older: kept
    assert value(scrape(sink), record_age, topic="__consumer_offsets", partition=0) == 12.5
    clock.now_s += 100  # the collector stopped: the ages keep growing
    samples = scrape(sink)
    assert value(samples, snap_age, cluster=CLUSTER) == 104.5
    assert value(samples, ends_age, cluster=CLUSTER) == 108.5


def test_lag_series_of_end_offsets_older_than_the_bound_are_dropped(
    clocked: tuple[PrometheusSink, Clock],
) -> None:
    sink, _clock = clocked
    labels = {**G, "topic": "t", "partition": "0"}
    sink.update([status(T0, lag_status="OK"), lag(0, 5, 1.0, at_ms=T0, status="OK")])
    sink.update([lag(1, 7, 2.0, at_ms=T0 + 30_000, status="WARN")])
    # records read up to 60 s after the first row's end offsets: still within the bound
    sink.record_sources(CLUSTER, [source_stats(0, max_ts_ms=T0 + 60_000)])
    samples = scrape(sink)
    assert value(samples, "kafka_consumergroup_lag", **labels) == 5
    assert value(samples, "kafka_consumergroup_status", **G) == 1
    # a group that stopped committing gets no new row: its lag would read 5 forever
    sink.record_sources(CLUSTER, [source_stats(0, max_ts_ms=T0 + 60_001)])
    samples = scrape(sink)
    for name in ("kafka_consumergroup_lag", "kafka_consumergroup_lag_seconds",
                 "kafka_consumergroup_partition_status"):  # fmt: skip
        assert value(samples, name, **labels) is None, name
        assert value(samples, name, **{**labels, "partition": "1"}) is not None, name
    assert value(samples, "kafka_consumergroup_status", **G) is None
    # an older row cannot bring it back; a fresh one can
    sink.update([lag(0, 5, 1.0, at_ms=T0 - 1)])
    assert value(scrape(sink), "kafka_consumergroup_lag", **labels) is None
    sink.update([lag(0, 9, 1.0, at_ms=T0 + 61_000)])
    assert value(scrape(sink), "kafka_consumergroup_lag", **labels) == 9


def test_the_jobs_own_lag_from_the_querys_progress(sink: PrometheusSink) -> None:
    where = {"topic": "__consumer_offsets", "partition": "4"}
    sink.record_progress(1000.0, [("__consumer_offsets", 4, 100, 100)])
    samples = scrape(sink)
    assert value(samples, mn.SOURCE_LAG.name, **where) == 0
    assert value(samples, mn.SOURCE_LAG_SECONDS.name, **where) == 0
    # the log grows 100 records a second, the job reads 50 of them per batch
    sink.record_progress(1001.0, [("__consumer_offsets", 4, 150, 200)])
    sink.record_progress(1002.0, [("__consumer_offsets", 4, 200, 300)])
    samples = scrape(sink)
    assert value(samples, mn.SOURCE_LAG.name, **where) == 100
    # offset 200 was the latest at 1001 s: read 1 s after it was the end of the log
    assert value(samples, mn.SOURCE_LAG_SECONDS.name, **where) == 1.0


def test_rows_written_and_the_series_count(sink: PrometheusSink) -> None:
    sink.record_rows_written("offset_commits", 20)
    sink.record_rows_written("offset_commits", 5)
    sink.record_rows_written("partition_lag", 3)
    samples = scrape(sink)
    assert value(samples, "rebalance_monitor_rows_written_total", table="offset_commits") == 25
    assert value(samples, "rebalance_monitor_rows_written_total", table="partition_lag") == 3
    # every series (histogram: one per labels) but the ones without a value yet (kafka_up)
    unset = {mn.KAFKA_UP.name, mn.TRIGGER_INTERVAL_SECONDS.name}
    jobs = {s.name for s in mn.ALL_METRICS if not s.labels and s.name not in unset}
    before = value(samples, "rebalance_monitor_exporter_series")
    assert before == len(jobs) + 2
    sink.update([lag(0, 5, 1.0, at_ms=T0, status="OK")])  # lag, lag_seconds, partition_status
    assert value(scrape(sink), "rebalance_monitor_exporter_series") == before + 3
    sink.update([deleted(T0 + 1)])
    assert value(scrape(sink), "rebalance_monitor_exporter_series") == before


def test_source_offsets_of_a_progress_report() -> None:
    from streaming.spark.progress import source_offsets

    end = '{"__consumer_offsets": {"0": 10, "1": 5}, "rm.membership": {"0": 7}}'
    latest = '{"__consumer_offsets": {"0": 12, "1": 5}, "rm.membership": {"0": 7}}'
    assert source_offsets([(end, latest)]) == [
        ("__consumer_offsets", 0, 10, 12),
        ("__consumer_offsets", 1, 5, 5),
        ("rm.membership", 0, 7, 7),
    ]
    assert source_offsets([(None, latest), ("not json", latest)]) == []


def test_progress_listener_reads_a_report_as_spark_writes_its_json() -> None:
    """Spark's ``StreamingQueryProgress.json`` embeds a Kafka source's offsets as objects;
    reports of other queries are ignored."""
    import json

    from streaming.spark.progress import ProgressListener

    got: list[tuple[float, list[tuple[str, int, int, int]]]] = []
    listener = ProgressListener("rebalance-monitor-events", lambda ts, o: got.append((ts, o)))
    report = {
        "name": "rebalance-monitor-events",
        "timestamp": "2026-11-29T04:00:01.500Z",
        "batchId": 7,
        "sources": [
            {
                "description": "KafkaV2[Subscribe[__consumer_offsets]]",
                "endOffset": {"__consumer_offsets": {"3": 40, "0": 10}},
                "latestOffset": {"__consumer_offsets": {"3": 45, "0": 10}},
            },
            {"description": "MemoryStream", "endOffset": "7", "latestOffset": None},
        ],
    }
    listener.on_report(json.dumps({**report, "name": "another-query"}))
    assert got == []
    listener.on_report(json.dumps(report))
    assert got == [
        (1795924801.5, [("__consumer_offsets", 0, 10, 10), ("__consumer_offsets", 3, 40, 45)])
    ]
