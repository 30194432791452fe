"""Local mode listens on the loopback address only (``streaming.spark.session``,
``LOCAL_BIND_CONF`` and ``SPARK_LOCAL_IP``): the driver's RPC endpoint and the block manager
of the shared test session, and the UI of a session that asks for it. Checked on the JVM's
real sockets (``/proc``, :mod:`tests.listening`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.listening import listening, not_loopback

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


def test_the_driver_and_block_manager_listen_on_the_loopback_only(spark: SparkSession) -> None:
    jvm = spark._jvm
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    sockets = listening(pid)
    block_manager = spark.sparkContext._jsc.sc().env().blockManager().blockManagerId()
    driver_port = int(spark.sparkContext.getConf().get("spark.driver.port"))
    assert {p for _, p in sockets} >= {driver_port, int(block_manager.port())}, sockets
    assert not_loopback(sockets) == set()
    assert spark.sparkContext.uiWebUrl is None  # the UI is off unless asked for


UI_SCRIPT = """
import json, sys
from streaming.spark.session import build_session
from tests.listening import listening
spark = build_session("ui-check", master="local[1]", conf={"spark.ui.enabled": "true"})
pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
url = spark.sparkContext.uiWebUrl
print(json.dumps({"url": url, "sockets": sorted(listening(pid))}))
spark.stop()
"""


def test_the_ui_when_asked_for_listens_on_the_loopback_only() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", UI_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_IP"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    ui_port = int(seen["url"].rsplit(":", 1)[1])
    sockets = {(ip, port) for ip, port in seen["sockets"]}
    assert ui_port in {p for _, p in sockets}, seen
    assert not_loopback(sockets) == set(), seen
