"""A real Prometheus scrapes the exporter over TLS with a client certificate and basic auth
(``--web-config-file``, :mod:`streaming.sinks.web_config`); the same scrape without the
credentials is refused (HTTP 401, ``up`` 0)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import yaml

from streaming.sinks.prometheus import PrometheusSink
from streaming.sinks.web_config import load_web_config
from tests.dashboards.promql import PrometheusServer
from tests.tls import Certs, make_certs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PASSWORD = "scrape-s3cret"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Certs, int, Path]]:
    folder = tmp_path_factory.mktemp("exporter-tls")
    certs = make_certs(folder / "certs")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    web = folder / "web.yml"
    web.write_text(
        yaml.safe_dump(
            {
                "tls_server_config": {
                    "cert_file": str(certs.server_cert),
                    "key_file": str(certs.server_key),
                    "client_auth_type": "RequireAndVerifyClientCert",
                    "client_ca_file": str(certs.ca),
                },
                "basic_auth_users": {"prometheus": hashed},
            }
        )
    )
    sink = PrometheusSink()
    port = sink.start("127.0.0.1", 0, web_config=load_web_config(web))
    sink.record_batch(0.2, 42, 0, 1.0)
    tls = {
        "ca_file": str(certs.ca),
        "cert_file": str(certs.client_cert),
        "key_file": str(certs.client_key),
    }
    config = folder / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "scrape_configs": [
                    {
                        "job_name": "secured",
                        "scheme": "https",
                        "tls_config": tls,
                        "basic_auth": {"username": "prometheus", "password": PASSWORD},
                        "static_configs": [{"targets": ["x"]}],
                    },
                    {
                        "job_name": "no-credentials",
                        "scheme": "https",
                        "tls_config": tls,
                        "static_configs": [{"targets": ["x"]}],
                    },
                ]
            }
        )
    )
    try:
        yield certs, port, config
    finally:
        sink.stop()


def test_prometheus_scrapes_over_tls_with_basic_auth_and_without_them_is_refused(
    setup: tuple[Certs, int, Path], tmp_path: Path
) -> None:
    _certs, port, config = setup
    with PrometheusServer(
        tmp_path, f"127.0.0.1:{port}", config=config, rule_files=[]
    ) as prometheus:
        prometheus.wait_for_scrape("secured", samples=2)
        rows = prometheus.query('rebalance_monitor_input_rows_total{job="secured"}')
        assert [float(r["value"][1]) for r in rows] == [42.0]
        deadline = time.monotonic() + 30
        while True:  # both jobs scraped at least once
            targets = {t["labels"]["job"]: t for t in prometheus.api("targets")["activeTargets"]}
            if all(t["health"] != "unknown" for t in targets.values()):
                break
            assert time.monotonic() < deadline, targets
            time.sleep(0.2)
        assert targets["secured"]["scrapeUrl"].startswith("https://")
        assert targets["secured"]["health"] == "up"
        refused = targets["no-credentials"]
        assert refused["health"] == "down", refused
        assert "401" in refused["lastError"], refused
        up = prometheus.query('up{job="no-credentials"}')
        assert [float(r["value"][1]) for r in up] == [0.0]
