"""Every dashboard and alert expression on a real Prometheus scraping the real exporter.

The exporter is :class:`streaming.sinks.prometheus.PrometheusSink` on a free port. It is fed
the way the job feeds it: the golden ``__consumer_offsets`` records of real groups
(``tests/fixtures/golden``) go through the tracker in micro-batches of a few records
(``streaming.tracking.apply``, as in ``tests/unit/streaming/tracking/test_golden.py``), the
tracker events become the job's event rows (``events_to_rows``, then what the driver reads
of them, ``driver_row``, as ``Sinks.events_batch`` does) and reach
:meth:`PrometheusSink.update`; each micro-batch is also recorded with
:meth:`PrometheusSink.record_batch` (records read, offset gaps counted per source partition
as ``Sinks.records_batch`` does), with its source stats' freshness, the query's progress
(the job's own lag), the trigger interval and the rows of each table. Lag comes from the
tracker's ``partition_lag`` rows: the fixtures' collector ``topics`` snapshot carries the
end offsets the clients saw. Each group is replayed up to the micro-batch in which its last member
leaves, so it is still running: members hold partitions, lag is measured.

Prometheus (Debian's binary, the project's ``prometheus.yml`` and rules) scrapes it every
second. Then every expression must parse and return at least one series: alert conditions
are evaluated with their comparisons made ``bool`` (``promql.unthresholded``): the alerts
rightly do not fire on healthy groups, and the ``bool`` form proves their selectors match;
separately every rule must be loaded and evaluated healthy.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from streaming.sinks.micro_batch import driver_row
from streaming.sinks.prometheus import PrometheusSink
from streaming.spark.buckets import logical_now_ms
from streaming.spark.step_rows import events_to_rows
from streaming.tables import KIND_TO_TABLE
from streaming.tracking import GroupState, RebalanceEvent, apply
from streaming.tracking.events import TrackedGroups, event_id
from streaming.tracking.reducer import ordered
from tests.dashboards import promql
from tests.dashboards.promql import PrometheusServer, Query
from tests.unit.streaming.tracking.test_golden import FIXTURES, load, observations

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CLUSTER = "golden"
MEMBERSHIP_TOPIC = "rebalance-monitor.membership"
BATCH_RECORDS = 6


@dataclass
class Fed:
    """What the replay gave the exporter (the job's progress-line totals)."""

    port: int = 0
    batches: int = 0
    records: int = 0
    offset_gaps: int = 0


def replay(name: str, sink: PrometheusSink, fed: Fed, last_offsets: dict[Any, int]) -> None:
    """Feed one golden group to ``sink`` in micro-batches, counting into ``fed``."""
    fixture = load(name)
    obs = ordered(observations(fixture))
    state = GroupState.new(CLUSTER, fixture["group_id"])
    sink.expect_cluster(CLUSTER, time.time())  # the job's start: no group snapshot read yet
    sink.record_trigger_interval(1.0)
    latest = {_topic(o): o.offset + 1 for o in obs}  # the end of each source partition
    for start in range(0, len(obs), BATCH_RECORDS):
        chunk = obs[start : start + BATCH_RECORDS]
        # the job's "now": the batch's latest record time (a status per batch, in order)
        now_ms = logical_now_ms(state, chunk)
        state, events = apply(state, chunk, now_ms)
        if any(isinstance(e, RebalanceEvent) and not e.members_after for e in events):
            return  # the last member leaves: keep the group as it was while it ran
        # the stateful step's count of its bucket's states (here a bucket per group)
        bucket = f"bucket:{fixture['group_id']}"
        count = TrackedGroups(
            event_id=event_id("tracked", CLUSTER, bucket, now_ms),
            cluster=CLUSTER,
            group_id=bucket,
            event_ts_ms=now_ms,
            groups=0 if state.is_empty() else 1,
        )
        events = [*events, count]
        started = time.monotonic()
        rows = [  # what the driver reads of the job's rows (a rebalance: its summary)
            driver for driver in map(driver_row, events_to_rows(events)) if driver is not None
        ]
        sink.update(rows)
        sink.record_sources(CLUSTER, source_stats(chunk))
        for table, n in Counter(
            KIND_TO_TABLE[r["kind"]] for r in events_to_rows(events) if r["kind"] in KIND_TO_TABLE
        ).items():
            sink.record_rows_written(table, n)  # what Delta would count of each append
        read_to = {_topic(o): o.offset + 1 for o in chunk}
        sink.record_progress(
            time.time(),
            [(t, p, read_to[(t, p)], end) for (t, p), end in latest.items() if (t, p) in read_to],
        )
        gaps = offset_gaps(chunk, last_offsets)
        sink.record_batch(
            time.monotonic() - started,
            len(chunk),
            0,
            time.time(),
            batch_id=fed.batches,
            unrouted_records=0,
            offset_gaps=gaps,
        )
        sink.record_kafka_check(True, time.time())  # the job's broker watch: reachable
        fed.batches += 1
        fed.records += len(chunk)
        fed.offset_gaps += gaps


def _topic(o: Any) -> tuple[str, int]:
    return ("__consumer_offsets" if o.source == "offsets" else MEMBERSHIP_TOPIC, o.partition)


def source_stats(chunk: list[Any]) -> list[dict[str, Any]]:
    """What the decode step's source stats say of the batch's freshness, per source
    partition: the newest record time and collector snapshot times."""
    stats: dict[tuple[str, int], dict[str, Any]] = {}
    for o in chunk:
        topic, partition = _topic(o)
        s = stats.setdefault((topic, partition), {"topic": topic, "partition": partition})
        s["max_ts_ms"] = max(s.get("max_ts_ms", o.timestamp_ms), o.timestamp_ms)
        ends = getattr(o.payload, "end_offsets_ts_ms", None)
        if ends is not None:
            s["end_offsets_ts_ms"] = max(s.get("end_offsets_ts_ms", ends), ends)
    return list(stats.values())


def offset_gaps(chunk: list[Any], last_offsets: dict[Any, int]) -> int:
    """Offsets never seen, per source partition: holes inside the batch and since the last
    batch, as ``Sinks.records_batch`` counts them (the fixtures hold every record of their
    ``__consumer_offsets`` partition, so this stays 0)."""
    gaps = 0
    by_partition: dict[Any, list[int]] = {}
    for o in chunk:
        by_partition.setdefault((o.source, o.partition), []).append(o.offset)
    for key, offsets in by_partition.items():
        lo, hi, n = min(offsets), max(offsets), len(set(offsets))
        gaps += hi - lo + 1 - n
        last = last_offsets.get(key)
        if last is not None and lo > last + 1:
            gaps += lo - last - 1
        last_offsets[key] = max(hi, last if last is not None else -1)
    return gaps


@pytest.fixture(scope="module")
def exporter() -> Iterator[Fed]:
    sink = PrometheusSink()
    fed = Fed(port=sink.start("127.0.0.1", 0))
    last_offsets: dict[Any, int] = {}
    try:
        for name in FIXTURES:
            replay(name, sink, fed, last_offsets)
        yield fed
    finally:
        sink.stop()


@pytest.fixture(scope="module")
def prometheus(
    exporter: Fed, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PrometheusServer]:
    target = f"127.0.0.1:{exporter.port}"
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"), target)
    with server:
        server.wait_for_scrape(samples=3)
        server.wait_for_rule_evaluation()
        yield server


def test_the_replay_exports_every_metric(prometheus: PrometheusServer) -> None:
    """Every metric of metric_names has a series: the data is rich enough for the check."""
    missing = [
        name
        for name in sorted(
            promql.known_metric_names() - promql.PROMETHEUS_SERIES - promql.recorded_names()
        )
        if not prometheus.query(f'{name}{{job="rebalance-monitor"}}')
    ]
    assert missing == []


def test_every_dashboard_and_rule_query_returns_series(prometheus: PrometheusServer) -> None:
    queries = [*promql.dashboard_queries(), *promql.rule_queries()]
    assert len(queries) > 40
    promql.assert_all_queries_return_series(prometheus, queries)


def test_the_group_dashboard_with_concrete_values(prometheus: PrometheusServer) -> None:
    """As Grafana sends them for one group: exact cluster and group matchers. The KIP-848
    group, whose rebalances have durations (classic groups get them from collector
    snapshots, which the fixtures do not have)."""
    group = load("kip848-uniform")["group_id"]
    queries = promql.dashboard_queries(
        {"job": "rebalance-monitor", "cluster": CLUSTER, "group": group}
    )
    group_queries = [q for q in queries if q.source.startswith("group.json")]
    assert any(f'group="{group}"' in q.expr for q in group_queries)
    promql.assert_all_queries_return_series(prometheus, group_queries, check_rules=False)


def test_the_variables_list_the_replayed_groups(prometheus: PrometheusServer) -> None:
    (query,) = [
        q
        for q in promql.dashboard_queries({"cluster": CLUSTER})
        if q.source == "group.json / variable 'group'"
    ]
    groups = {r["metric"]["group"] for r in prometheus.query(query.expr)}
    assert groups == {load(name)["group_id"] for name in FIXTURES}


def test_every_alert_rule_is_loaded_and_healthy(prometheus: PrometheusServer) -> None:
    rules = prometheus.rules()
    assert {r["name"] for r in rules} == {
        str(r.get("alert") or r.get("record")) for _file, r in promql.load_rules()
    }
    assert [(r["name"], r["health"], r["lastError"]) for r in rules if r["health"] != "ok"] == []


def test_the_check_fails_on_a_wrong_metric_and_on_bad_promql(
    prometheus: PrometheusServer,
) -> None:
    """The check can fail, and names the expression: a misspelled metric returns nothing,
    a syntax error comes back with Prometheus' parse error."""
    typo = 'sum(kafka_consumergroup_lagg{cluster=~".+"})'
    with pytest.raises(
        AssertionError, match=r"no series\n    expression: sum\(kafka_consumergroup_lagg"
    ):
        promql.assert_all_queries_return_series(
            prometheus, [Query("typo", typo)], check_rules=False
        )
    with pytest.raises(
        AssertionError, match=r"broken: Prometheus refused it: bad_data: .*parse error"
    ):
        promql.assert_all_queries_return_series(
            prometheus, [Query("broken", "sum(kafka_consumergroup_lag")], check_rules=False
        )


def test_the_health_metrics_are_what_the_replay_recorded(
    prometheus: PrometheusServer, exporter: Fed
) -> None:
    def value(name: str) -> float:
        (series,) = prometheus.query(f'{name}{{job="rebalance-monitor"}}')
        return float(series["value"][1])

    assert exporter.batches > len(FIXTURES)
    assert value("rebalance_monitor_batches_total") == exporter.batches
    assert value("rebalance_monitor_input_rows_total") == exporter.records
    # the fixtures hold every record of their __consumer_offsets partition: no gaps
    assert value("rebalance_monitor_offset_gaps_total") == exporter.offset_gaps == 0
    assert value("rebalance_monitor_bad_records_total") == 0
