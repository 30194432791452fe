"""The alert rules and the Prometheus configuration, checked by ``promtool`` (Debian's
``prometheus`` package, ``make prometheus-bin``): configuration and rule syntax, the unit
tests of ``dashboards/prometheus/tests/``, and that those tests notice a changed threshold.
Plus the conventions every rule follows (severity, runbook, a section in docs/alerts.md). A
few seconds.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.dashboards import promql

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

REPO = promql.REPO
RULE_FILES = sorted(promql.RULES.glob("*.yml"))
TEST_FILES = sorted((promql.PROMETHEUS_DIR / "tests").glob("*.yml"))
ALERTS_MD = REPO / "docs" / "alerts.md"
SEVERITIES = ("critical", "warning", "info")
#: Every rule's runbook_url: the external label ``runbook_base_url`` (a placeholder host
#: without it), then the alert's section of docs/alerts.md.
RUNBOOK_URL = (
    '{{{{ or $externalLabels.runbook_base_url "https://rebalance-monitor.invalid/docs" }}}}'
    "/alerts.md#{anchor}"
)


def promtool(*args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not on PATH: `make setup` installs it (make prometheus-bin)")
    return subprocess.run(
        [binary, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def alerts() -> list[dict[str, Any]]:
    return [rule for _file, rule in promql.load_rules() if "alert" in rule]


def test_the_files_exist() -> None:
    assert RULE_FILES == [promql.RULES / "rebalance-monitor.rules.yml"]
    assert TEST_FILES == [promql.PROMETHEUS_DIR / "tests" / "rebalance-monitor.test.yml"]


def test_promtool_check_config_finds_the_rules() -> None:
    result = promtool("check", "config", promql.PROMETHEUS_YML.relative_to(REPO))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"SUCCESS: {len(RULE_FILES)} rule files found" in output, output
    for path in RULE_FILES:
        assert f"Checking {path.relative_to(REPO)}" in output, output


def test_promtool_check_rules() -> None:
    result = promtool("check", "rules", *RULE_FILES)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"SUCCESS: {len(promql.load_rules())} rules found" in output, output


def test_promtool_unit_tests_pass() -> None:
    result = promtool("test", "rules", *TEST_FILES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_tested_firing_and_quiet() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    for path in TEST_FILES:
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for check in case.get("alert_rule_test", ()):
                (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert len(names) >= 10
    assert names - firing == set(), "alerts without a test where they fire"
    assert names - quiet == set(), "alerts without a test where they stay quiet"
    assert (firing | quiet) - names == set(), "tests of alerts that do not exist"


def test_every_alert_has_severity_and_runbook() -> None:
    for rule in alerts():
        name = rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, name
        annotations = rule["annotations"]
        assert set(annotations) == {"summary", "description", "runbook", "runbook_url"}, name
        assert all(str(v).strip() for v in annotations.values()), name
        assert annotations["runbook_url"] == RUNBOOK_URL.format(anchor=name.lower()), name


def test_docs_have_a_section_per_alert_with_its_promql() -> None:
    """docs/alerts.md: a ``## <alert>`` section (the runbook_url anchor) per alert, with the
    rule's expression as written, and a row in the summary table with its severity."""
    text = ALERTS_MD.read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## (\S+)\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    names = [rule["alert"] for rule in alerts()]
    assert sorted(sections) == sorted(names)
    squash = " ".join
    for rule in alerts():
        name = rule["alert"]
        body = sections[name]
        for heading in ("**Meaning.**", "**Likely causes.**", "**What to do.**", "**PromQL.**"):
            assert heading in body, (name, heading)
        blocks = re.findall(r"```promql\n(.*?)```", body, re.S)
        assert squash(rule["expr"].split()) in [squash(b.split()) for b in blocks], name
        row = f"| [{name}](#{name.lower()}) | {rule['labels']['severity']} |"
        assert row in text, row


def test_the_compose_scrape_config() -> None:
    doc = yaml.safe_load(promql.PROMETHEUS_YML.read_text(encoding="utf-8"))
    (job,) = doc["scrape_configs"]
    assert job["job_name"] == promql.JOB
    assert job["static_configs"] == [{"targets": ["monitor:9108"]}]
    assert doc["rule_files"] == ["rules/*.yml"]  # relative: /etc/prometheus/rules/ in compose
    assert doc["global"]["scrape_interval"] == "5s"
    # the rules name the job of the scrape config
    assert f'up{{job="{promql.JOB}"}}' in promql.RULES.joinpath(
        "rebalance-monitor.rules.yml"
    ).read_text(encoding="utf-8")


#: (alert, text in the rules file, replacement): each must make a promtool test fail.
MUTATIONS = [
    ("KafkaConsumerGroupRebalanceStorm", "increase10m >= bool 6", "increase10m >= bool 11"),
    (
        "KafkaConsumerGroupRebalanceStorm",
        '{cause!="cooperative_followup"}[10m]',
        "[10m]",
    ),
    ("KafkaConsumerGroupRebalanceStuck", "for: 10m", "for: 20m"),
    ("KafkaConsumerGroupAssignmentSkewed", "skew_partitions) >= 2", "skew_partitions) >= 1"),
    # any strategy's divergence, not only the own one's (4b)
    (
        "KafkaConsumerGroupAssignmentDivergent",
        "and on (cluster, group, strategy)",
        "and on (cluster, group)",
    ),
    # a matching own strategy (divergent 0) fires too (4b)
    (
        "KafkaConsumerGroupAssignmentDivergent",
        "(kafka_consumergroup_assignment_divergent) == 1",
        "(kafka_consumergroup_assignment_divergent) >= 0",
    ),
    # the former rule, "matches no strategy", misses a group whose own strategy diverges (4a)
    (
        "KafkaConsumerGroupAssignmentDivergent",
        "max by (cluster, group, strategy) (kafka_consumergroup_assignment_divergent) == 1\n"
        "          and on (cluster, group, strategy)\n"
        "          kafka_consumergroup_assignor_info",
        "min by (cluster, group) (kafka_consumergroup_assignment_divergent) == 1",
    ),
    ("KafkaConsumerGroupHighChurn", "clamp_min(sum by", "clamp_min(max by"),
    ("KafkaConsumerGroupLagGrowing", "lag_seconds) > 300", "lag_seconds) > 1000"),
    ("KafkaConsumerGroupLagStatusError", "_status) >= 3", "_status) >= 4"),
    ("KafkaConsumerGroupLagStatusError", "_status) >= 3", "_status) >= 2"),  # WARN (12b)
    ("RebalanceMonitorDown", 'absent(up{job="rebalance-monitor"})', 'absent(up{job="x"})'),
    ("RebalanceMonitorStalled", "seconds > 300", "seconds > 900"),
    ("RebalanceMonitorBadRecords", "[15m]) > 0", "[15m]) > 30"),
    ("RebalanceMonitorOffsetGaps", "> 0.1 * rate", "> 0.3 * rate"),
    ("RebalanceMonitorUnroutedRecords", "> 0.01 * rate", "> 0.06 * rate"),
    ("RebalanceMonitorMembershipSnapshotsStale", "snapshot_age_seconds) > 60", "_seconds) > 300"),
    ("RebalanceMonitorEndOffsetsStale", "end_offsets_age_seconds) > 60", "_seconds) > 600"),
    ("RebalanceMonitorSourcePartitionStale", "rebalance_monitor_source_lag > 0", "_lag > 1e9"),
    ("RebalanceMonitorFallingBehind", "  ) > 300\n        for: 15m", "  ) > 900\n        for: 15m"),
    (
        "RebalanceMonitorBatchesSlow",
        "> on (job, instance) rebalance",
        "> on (job, instance) 3 * rebalance",
    ),
]


@pytest.mark.parametrize(
    ("alert", "old", "new"), MUTATIONS, ids=[f"{a}:{o}" for a, o, _n in MUTATIONS]
)
def test_the_unit_tests_notice_a_changed_rule(
    alert: str, old: str, new: str, tmp_path: Path
) -> None:
    (rules,) = RULE_FILES
    text = rules.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must occur once in {rules.name}"
    (tmp_path / "rules").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "rules" / rules.name).write_text(text.replace(old, new), encoding="utf-8")
    for path in TEST_FILES:
        shutil.copy(path, tmp_path / "tests" / path.name)
    result = promtool("test", "rules", *(f"tests/{p.name}" for p in TEST_FILES), cwd=tmp_path)
    assert result.returncode != 0, f"no promtool test failed with {old!r} -> {new!r}"
    assert f"alertname: {alert}," in result.stdout + result.stderr
