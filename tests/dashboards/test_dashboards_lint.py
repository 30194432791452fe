"""The Grafana dashboards and their provisioning: Grafana's own dashboard-linter, and the
structure Grafana and the operators rely on.

``dashboard-linter`` (github.com/grafana/dashboard-linter v0.2.0) is built by
``make setup`` into ``.cache/bin/dashboard-linter`` and runs with ``--strict`` (warnings
fail too) and ``dashboards/grafana/.lint``, whose two exclusions give their reason. The
structural checks are plain Python: datasource variable on every panel and target, units,
unique ids, no overlapping panels, the group dashboard filtered by ``$cluster`` and
``$group`` everywhere, every metric name one the exporter exposes. Under a second, plus
about a second per linter run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.dashboards import promql

REPO = promql.REPO
LINTER = REPO / ".cache" / "bin" / "dashboard-linter"
DASHBOARDS = promql.load_dashboards()
NAMES = sorted(DASHBOARDS)
DS = {"type": "prometheus", "uid": "${datasource}"}
PROVISIONING = promql.DASHBOARDS / "provisioning"
BUILTIN_VARIABLES = {"__rate_interval", "__interval", "__range", "__range_s"}


def panels(dash: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(promql.iter_panels(dash["panels"]))


def queries(dash: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, raw expression) of every panel target, annotation and variable query."""
    out = [
        (f"panel {p['id']} {p.get('title')!r} {t.get('refId')}", t.get("expr", ""))
        for p in panels(dash)
        for t in p.get("targets", ())
    ]
    out += [
        (f"annotation {a['name']!r}", a["expr"])
        for a in dash["annotations"]["list"]
        if not a.get("builtIn")
    ]
    out += [
        (f"variable {v['name']!r}", promql.variable_promql(v["query"]["query"]))
        for v in dash["templating"]["list"]
        if v["type"] == "query"
    ]
    return out


def selectors(expr: str) -> list[tuple[str, str]]:
    """(metric name, matchers) of every ``name{...}`` selector."""
    return re.findall(r"([A-Za-z_:][\w:]*)\s*(\{[^}]*\})", expr)


def variables(dash: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {v["name"]: v for v in dash["templating"]["list"]}


# -- Grafana's linter ------------------------------------------------------------------------


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    if not LINTER.exists():
        pytest.fail(f"{LINTER.relative_to(REPO)} is missing: `make setup` builds it")
    return subprocess.run(
        [str(LINTER), "lint", "--strict", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_dashboard_linter_passes(name: str) -> None:
    result = lint(promql.DASHBOARDS / name)
    output = "\n".join(
        line
        for line in (result.stdout + result.stderr).splitlines()
        if not line.startswith("Checks")
    )
    assert result.returncode == 0, output


@pytest.mark.integration
def test_dashboard_linter_catches_a_panel_without_unit(tmp_path: Path) -> None:
    """The linter and the ``.lint`` exclusions leave the other rules on: a panel whose unit
    is removed fails."""
    dash = json.loads((promql.DASHBOARDS / "group.json").read_text(encoding="utf-8"))
    victim = next(p for p in panels(dash) if p["type"] == "timeseries")
    del victim["fieldConfig"]["defaults"]["unit"]
    (tmp_path / "group.json").write_text(json.dumps(dash), encoding="utf-8")
    shutil.copy(promql.DASHBOARDS / ".lint", tmp_path / ".lint")
    result = lint(tmp_path / "group.json")
    assert result.returncode != 0
    assert f"panel '{victim['title']}' has no or invalid units" in result.stdout + result.stderr


@pytest.mark.unit
def test_lint_exclusions_give_their_reason() -> None:
    config = yaml.safe_load((promql.DASHBOARDS / ".lint").read_text(encoding="utf-8"))
    assert set(config) == {"exclusions"}
    assert sorted(config["exclusions"]) == ["target-instance-rule", "template-instance-rule"]
    assert all(len(rule["reason"]) > 40 for rule in config["exclusions"].values())


# -- structure -------------------------------------------------------------------------------


@pytest.mark.unit
def test_the_dashboards() -> None:
    assert NAMES == ["group.json", "overview.json"]
    uids = {d["uid"] for d in DASHBOARDS.values()}
    assert uids == {"rebalance-monitor-overview", "rebalance-monitor-group"}


@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_dashboard_settings(name: str) -> None:
    dash = DASHBOARDS[name]
    assert dash["schemaVersion"] >= 39
    assert dash["editable"] is False  # provisioned: changes belong in this repository
    assert dash["id"] is None
    assert dash["title"].startswith("Rebalance monitor / ")
    assert "rebalance-monitor" in dash["tags"]  # the dashboards' links list by this tag
    assert dash["description"]


@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_the_datasource_variable_and_query_variables(name: str) -> None:
    dash = DASHBOARDS[name]
    vs = variables(dash)
    ds = vs["datasource"]
    assert (ds["type"], ds["query"]) == ("datasource", "prometheus")
    assert ds["current"]["value"] == "prometheus"  # the provisioned datasource's uid
    for var in vs.values():
        if var["type"] == "query":
            assert var["datasource"] == DS, var["name"]
            assert var["refresh"] == 2, var["name"]  # on time range change
            assert var["definition"] == var["query"]["query"], var["name"]
            if var.get("includeAll"):
                assert var["allValue"] == ".+", var["name"]


@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_every_panel_has_datasource_targets_unit_and_description(name: str) -> None:
    problems = []
    for p in panels(DASHBOARDS[name]):
        if p["type"] == "row":
            assert "targets" not in p and "datasource" not in p, p["title"]
            continue
        where = f"panel {p['id']} {p.get('title')!r}"
        if p.get("datasource") != DS:
            problems.append(f"{where}: datasource {p.get('datasource')}")
        if not p.get("title") or not p.get("description"):
            problems.append(f"{where}: title or description missing")
        if not p.get("fieldConfig", {}).get("defaults", {}).get("unit"):
            problems.append(f"{where}: no unit")
        targets = p.get("targets") or []
        if not targets:
            problems.append(f"{where}: no targets")
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs):
            problems.append(f"{where}: duplicate refIds {refs}")
        for t in targets:
            if not str(t.get("expr", "")).strip():
                problems.append(f"{where} {t.get('refId')}: no expr")
            if t.get("datasource") != DS:
                problems.append(f"{where} {t.get('refId')}: datasource {t.get('datasource')}")
    for a in DASHBOARDS[name]["annotations"]["list"]:
        if not a.get("builtIn") and a.get("datasource") != DS:
            problems.append(f"annotation {a['name']!r}: datasource {a.get('datasource')}")
    assert problems == []


@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_panel_ids_are_unique_and_panels_do_not_overlap(name: str) -> None:
    ps = panels(DASHBOARDS[name])
    ids = [p["id"] for p in ps]
    assert len(ids) == len(set(ids))
    boxes = []
    for p in ps:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        boxes.append((p["title"], g["x"], g["y"], g["x"] + g["w"], g["y"] + g["h"]))
    overlaps = [
        (a[0], b[0])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]
    ]
    assert overlaps == []


@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_every_metric_exists_and_every_variable_is_defined(name: str) -> None:
    dash = DASHBOARDS[name]
    known = promql.known_metric_names()
    defined = set(variables(dash)) | BUILTIN_VARIABLES
    problems = []
    for where, expr in queries(dash):
        unknown = promql.metric_names(expr) - known
        if unknown:
            problems.append(f"{where}: unknown metrics {sorted(unknown)} in {expr}")
        used = {next(g for g in m if g) for m in promql._VARIABLE.findall(expr)}
        if used - defined:
            problems.append(f"{where}: undefined variables {sorted(used - defined)} in {expr}")
        if not promql.metric_names(expr):
            problems.append(f"{where}: selects no metric: {expr}")
    assert problems == []


@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_every_selector_filters_by_job_and_group_metrics_by_cluster(name: str) -> None:
    problems = []
    for where, expr in queries(DASHBOARDS[name]):
        for metric, matchers in selectors(expr):
            if 'job=~"$job"' not in matchers and not where.startswith("variable 'job'"):
                problems.append(f'{where}: {metric}{matchers} without job=~"$job"')
            if (
                metric.startswith("kafka_consumergroup_")
                and "$cluster" not in matchers
                and not where.startswith("variable 'cluster'")
            ):
                problems.append(f"{where}: {metric}{matchers} without $cluster")
    assert problems == []


@pytest.mark.unit
def test_group_dashboard_queries_are_filtered_by_cluster_and_group() -> None:
    dash = DASHBOARDS["group.json"]
    vs = variables(dash)
    assert {"cluster", "group"} <= set(vs)
    for var in ("cluster", "group"):  # one group at a time: exact matchers
        assert vs[var]["multi"] is False and vs[var]["includeAll"] is False
    problems = []
    for where, expr in queries(dash):
        if where.startswith("variable"):
            continue
        for metric, matchers in selectors(expr):
            if 'cluster="$cluster"' not in matchers or 'group="$group"' not in matchers:
                problems.append(f"{where}: {metric}{matchers}")
    assert problems == []
    assert 'cluster="$cluster"' in vs["group"]["query"]["query"]


@pytest.mark.unit
def test_group_dashboard_shows_what_the_drill_down_promises() -> None:
    exprs = " ".join(expr for _where, expr in queries(DASHBOARDS["group.json"]))
    for metric in (
        "kafka_consumergroup_generation",
        "kafka_consumergroup_members",
        "kafka_consumergroup_member_assigned_partitions",
        "kafka_consumergroup_assignment_imbalance_ratio",
        "kafka_consumergroup_partitions_moved_total",
        "kafka_consumergroup_rebalance_duration_seconds_bucket",
        "kafka_consumergroup_state",
    ):
        assert metric in exprs, metric
    assert "max by (strategy) (kafka_consumergroup_assignment_imbalance_ratio" in exprs


@pytest.mark.unit
def test_overview_covers_every_metric() -> None:
    """Every exported metric appears on the overview or the group dashboard."""
    used = set().union(
        *(promql.metric_names(e) for d in DASHBOARDS.values() for _w, e in queries(d))
    )
    families = {m.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count") for m in used}
    assert {spec.name for spec in promql.mn.ALL_METRICS} - families == set()


@pytest.mark.unit
def test_data_links_open_the_group_dashboard() -> None:
    group_uid = DASHBOARDS["group.json"]["uid"]
    links = [
        link["url"]
        for p in panels(DASHBOARDS["overview.json"])
        for link in p.get("fieldConfig", {}).get("defaults", {}).get("links", ())
    ]
    assert links
    for url in links:
        assert url.startswith(f"/d/{group_uid}/"), url
        assert "var-cluster=${__field.labels.cluster}" in url
        assert "var-group=${__field.labels.group}" in url


# -- provisioning ----------------------------------------------------------------------------


@pytest.mark.unit
def test_datasource_provisioning() -> None:
    doc = yaml.safe_load(
        (PROVISIONING / "datasources" / "prometheus.yml").read_text(encoding="utf-8")
    )
    assert doc["apiVersion"] == 1
    (ds,) = doc["datasources"]
    assert (ds["type"], ds["uid"], ds["url"]) == (
        "prometheus",
        "prometheus",
        "http://prometheus:9090",
    )
    scrape = yaml.safe_load(promql.PROMETHEUS_YML.read_text(encoding="utf-8"))
    assert ds["jsonData"]["timeInterval"] == scrape["global"]["scrape_interval"]


@pytest.mark.unit
def test_dashboard_provisioning() -> None:
    doc = yaml.safe_load(
        (PROVISIONING / "dashboards" / "rebalance-monitor.yml").read_text(encoding="utf-8")
    )
    assert doc["apiVersion"] == 1
    (provider,) = doc["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
    assert provider["allowUiUpdates"] is False  # matches editable: false
