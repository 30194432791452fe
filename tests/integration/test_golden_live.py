"""The golden-record capture, live: real groups on the session broker, checked at test time.

The same capture as ``tests/fixtures/capture_golden.py``, smaller (two kafka-python members
per classic assignor instead of three, and the KIP-848 group of two Java members), runs once
for this module against the ``kafka_broker`` fixture; every check the unit tier runs on the
stored fixtures (``tests/unit/streaming/test_golden_records.py``) then runs on these live
records. The last tests compare the live capture with the stored fixtures, so that a broker
or client upgrade that changes what the coordinator writes fails here instead of leaving
the fixtures silently stale.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from streaming.kafka_local import BrokerInfo
from tests.fixtures import capture_golden as golden

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

Json = dict[str, Any]

PLANS = golden.default_plans(small=True)
STORED: dict[str, Json] = {doc["name"]: doc for doc in golden.load_fixtures()}
RECAPTURE = "re-run `.venv/bin/python tests/fixtures/capture_golden.py` and review the diff"


@pytest.fixture(scope="module")
def live(kafka_broker: BrokerInfo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Json]:
    """Plan name -> the fixture document captured now."""
    log_dir: Path = tmp_path_factory.mktemp("golden-logs")
    docs = golden.capture(
        kafka_broker.bootstrap_servers,
        PLANS,
        group_prefix=f"golden-live-{secrets.token_hex(3)}",
        log_dir=log_dir,
        timeout_s=90,
    )
    return {doc["name"]: doc for doc in docs}


@pytest.mark.parametrize(
    ("name", "check"),
    [
        pytest.param(plan.name, check, id=f"{plan.name}:{check.name}")
        for plan in PLANS
        for check in golden.CHECKS
        if check.applies(plan.group_protocol, plan.assignor)
    ],
)
def test_live_records_agree_with_the_clients(
    live: dict[str, Json], name: str, check: golden.Check
) -> None:
    assert check.run(live[name]) == []


def test_live_capture_is_one_group_per_plan(live: dict[str, Json]) -> None:
    assert sorted(live) == sorted(plan.name for plan in PLANS)
    for doc in live.values():
        names = {m["name"] for point in doc["reports"]["stable"] for m in point["members"]}
        assert len(names) == 2, "two members joined"
        assert len(doc["reports"]["stable"][-1]["members"]) == 1, "one of them left"


@pytest.mark.parametrize("name", [plan.name for plan in PLANS])
def test_stored_fixture_is_current(live: dict[str, Json], name: str) -> None:
    """Same broker version and the same record shapes (type and value version) as the
    stored fixture of this group."""
    stored = STORED.get(name)
    assert stored is not None, f"no stored fixture {name}.json; {RECAPTURE}"
    assert live[name]["broker"]["version"] == stored["broker"]["version"], RECAPTURE
    assert golden.record_signature(live[name]) == golden.record_signature(stored), RECAPTURE
