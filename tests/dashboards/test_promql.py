"""The helpers of ``promql.py``: variable substitution, the ``bool`` form of alert
conditions, metric-name extraction, and the query lists they build. Pure, instant."""

from __future__ import annotations

import pytest

from tests.dashboards import promql

pytestmark = pytest.mark.unit

SUBSTITUTIONS = [
    # 1. a regex matcher takes the match-anything regex
    ('up{job=~"$job"}', None, 'up{job=~".+"}'),
    # 2. an exact matcher on a variable becomes a regex matcher, negations too
    ('x{cluster="$cluster", group!="${group}"}', None, 'x{cluster=~".+", group!~".+"}'),
    # 3. concrete values are used as written, matcher kept
    (
        'x{cluster="$cluster", group="$group"}',
        {"cluster": "prod"},
        'x{cluster="prod", group=~".+"}',
    ),
    # 4. built-ins become durations
    ("rate(x[$__rate_interval]) + increase(y[$__range])", None, "rate(x[1m]) + increase(y[1h])"),
    # 5. a variable outside a matcher
    ('count by (l) (x{a=~"[[job]]"})', {"job": "j"}, 'count by (l) (x{a=~"j"})'),
]


@pytest.mark.parametrize(("expr", "values", "expected"), SUBSTITUTIONS)
def test_substitute(expr: str, values: dict[str, str] | None, expected: str) -> None:
    assert promql.substitute(expr, values) == expected


def test_substitute_refuses_an_unknown_builtin() -> None:
    with pytest.raises(KeyError, match="__nope"):
        promql.substitute("rate(x[$__nope])")


UNTHRESHOLDED = [
    # 1. a filter comparison keeps every series as 0/1
    ("sum(x) > 5", "sum(x) > bool 5"),
    # 2. already bool: unchanged
    ("x >= bool 1", "x >= bool 1"),
    # 3. matchers and strings are not comparisons
    ('x{a!="b", c=~">"} == 0', 'x{a!="b", c=~">"} == bool 0'),
    # 4. every comparison of a conjunction
    ("a >= 2 and on (g) b <= 1.25", "a >= bool 2 and on (g) b <= bool 1.25"),
    # 5. absent(x) shows x; absent_over_time its last sample
    ('up{job="m"} == 0 or absent(up{job="m"})', 'up{job="m"} == bool 0 or (up{job="m"})'),
    ("absent_over_time(x[5m])", "last_over_time(x[5m])"),
    # 6. vector comparison against an expression
    ("rate(a[1m]) > 0.1 * rate(b[1m])", "rate(a[1m]) > bool 0.1 * rate(b[1m])"),
]


@pytest.mark.parametrize(("expr", "expected"), UNTHRESHOLDED)
def test_unthresholded(expr: str, expected: str) -> None:
    assert promql.unthresholded(expr) == expected


METRIC_NAMES = [
    ("sum by (cluster, group) (increase(a_total{c='x'}[5m]))", {"a_total"}),
    ("max without (instance) (y) > bool 1", {"y"}),
    ("a / on (cluster) group_left(label) b", {"a", "b"}),
    ("histogram_quantile(0.9, sum by (le) (rate(h_bucket[1m])))", {"h_bucket"}),
    ("time() - x offset 5m", {"x"}),
    ('{__name__="foo", job="j"}', {"foo"}),
    ("topk(10, count(up == 1))", {"up"}),
]


@pytest.mark.parametrize(("expr", "expected"), METRIC_NAMES)
def test_metric_names(expr: str, expected: set[str]) -> None:
    assert promql.metric_names(expr) == expected


def test_variable_promql() -> None:
    assert (
        promql.variable_promql('label_values(x{job=~"$job"}, cluster)')
        == 'count by (cluster) (x{job=~"$job"})'
    )
    with pytest.raises(ValueError, match="label_values"):
        promql.variable_promql("query_result(up)")


def test_dashboard_queries_cover_every_target_annotation_and_variable() -> None:
    expected = 0
    for dash in promql.load_dashboards().values():
        expected += sum(len(p.get("targets", ())) for p in promql.iter_panels(dash["panels"]))
        expected += sum(1 for a in dash["annotations"]["list"] if a.get("expr"))
        expected += sum(1 for v in dash["templating"]["list"] if v["type"] == "query")
    queries = promql.dashboard_queries()
    assert len(queries) == expected
    assert all("$" not in q.expr for q in queries), "every variable substituted"


def test_rule_queries_select_only_exported_metrics() -> None:
    queries = promql.rule_queries()
    assert len(queries) == len(promql.load_rules())
    known = promql.known_metric_names()
    assert {q.source: promql.metric_names(q.expr) - known for q in queries} == {
        q.source: set() for q in queries
    }
    assert all(promql.metric_names(q.expr) for q in queries)
