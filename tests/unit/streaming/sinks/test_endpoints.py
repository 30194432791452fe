"""The exporter's paths over real HTTP (:class:`streaming.sinks.prometheus._Endpoints`):
``/-/healthy`` and ``/-/ready`` answer without building the exposition, ``/metrics`` is the
exposition (with ``rebalance_monitor_build_info``), any other path is 404. The running job's
readiness (a real job behind TLS and basic auth) is in ``tests/spark/test_job_process.py``."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streaming.sinks import metric_names as mn
from streaming.sinks.prometheus import PrometheusSink
from streaming.version import build_info, version

pytestmark = pytest.mark.unit


@pytest.fixture
def sink() -> Iterator[PrometheusSink]:
    s = PrometheusSink()
    s.start(port=0)
    try:
        yield s
    finally:
        s.stop()


def _get(sink: PrometheusSink, path: str, method: str = "GET") -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{sink.port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _families_built(sink: PrometheusSink) -> int:
    return sum(family._kept is not None for family in sink._families)


def test_healthy_answers_without_building_the_exposition(sink: PrometheusSink) -> None:
    assert _get(sink, "/-/healthy") == (200, "OK\n")
    assert _get(sink, "/-/healthy", "HEAD") == (200, "")
    assert _families_built(sink) == 0


def test_ready_asks_the_job_and_says_why_not(sink: PrometheusSink) -> None:
    assert _get(sink, "/-/ready") == (503, "not ready: starting\n")  # no job yet
    reasons: list[str] = ["last micro-batch after 75 s (bound 60 s)", "kafka: down"]
    sink.readiness = lambda: list(reasons)
    assert _get(sink, "/-/ready") == (
        503,
        "not ready: last micro-batch after 75 s (bound 60 s); kafka: down\n",
    )
    reasons.clear()
    assert _get(sink, "/-/ready") == (200, "OK\n")
    assert _families_built(sink) == 0

    def broken() -> list[str]:
        raise RuntimeError("py4j gone")

    sink.readiness = broken
    assert _get(sink, "/-/ready") == (
        503,
        "not ready: readiness check failed: RuntimeError: py4j gone\n",
    )


@pytest.mark.parametrize("path", ["/favicon.ico", "/metricsx", "/metrics/", "/-/reload", "/x"])
def test_other_paths_are_404_not_the_exposition(sink: PrometheusSink, path: str) -> None:
    status, body = _get(sink, path)
    assert status == 404
    assert "rebalance_monitor" not in body
    assert _families_built(sink) == 0


def test_post_to_a_probe_is_refused(sink: PrometheusSink) -> None:
    assert _get(sink, "/-/ready", "POST")[0] == 405


def test_metrics_is_the_exposition_with_build_info(sink: PrometheusSink) -> None:
    sink.record_batch(0.2, 42, 0, 1.0)
    status, body = _get(sink, "/metrics")
    assert status == 200
    samples = {
        s.name: s
        for family in text_string_to_metric_families(body)
        for s in family.samples
        if s.name in (mn.BUILD_INFO.name, "rebalance_monitor_input_rows_total")
    }
    assert samples["rebalance_monitor_input_rows_total"].value == 42
    info = samples[mn.BUILD_INFO.name]
    assert info.value == 1
    assert info.labels == build_info()
    assert info.labels["version"] == version() != "unknown"
    assert info.labels["pyspark_version"].startswith("4.")
    assert _get(sink, "/metrics?name[]=rebalance_monitor_build_info")[1].count("build_info{") == 1
    status, landing = _get(sink, "/")
    assert status == 200 and "/metrics" in landing and "rebalance_monitor" not in landing
