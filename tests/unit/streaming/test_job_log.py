"""The job's lines (:mod:`streaming.job_log`): ISO-8601 UTC time, level, message; or JSON
lines. ``--version`` from the installed console script."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from streaming.job_log import JobLog, message_of
from streaming.version import version

pytestmark = pytest.mark.unit

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _near_now(stamp: str) -> bool:
    when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return abs(datetime.now(UTC) - when) < timedelta(seconds=30)


def test_text_lines_carry_time_and_level() -> None:
    out = io.StringIO()
    log = JobLog("text", out)
    log.info("[events] batch 3: 12 events")
    log.warning("kafka: DOWN: 127.0.0.1:1: connection refused (the job keeps trying)")
    first, second = out.getvalue().splitlines()
    stamp, level, rest = first.split(" ", 2)
    assert ISO.fullmatch(stamp) and _near_now(stamp)
    assert (level, rest) == ("INFO", "[events] batch 3: 12 events")
    assert second.split(" ", 2)[1] == "WARNING"
    assert message_of(first) == "[events] batch 3: 12 events"
    assert message_of("no prefix here") == "no prefix here"


def test_json_lines_are_one_object_each() -> None:
    out = io.StringIO()
    log = JobLog("json", out)
    log.info('started: "quoted" ünïcode')
    log.error("failed: x\nsecond line")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert set(first) == {"ts", "level", "message"}
    assert ISO.fullmatch(first["ts"]) and _near_now(first["ts"])
    assert first["level"] == "INFO" and first["message"] == 'started: "quoted" ünïcode'
    assert second == {**second, "level": "ERROR", "message": "failed: x\nsecond line"}


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="log format: expected one of text, json"):
        JobLog("xml")


@pytest.mark.parametrize("argv", [["--version"], ["run", "--version"]])
def test_version_from_the_console_script(argv: list[str]) -> None:
    script = Path(sys.executable).parent / "rebalance-monitor"
    done = subprocess.run(
        [str(script), *argv], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith(f"rebalance-monitor {version()} (python {sys.version.split()[0]}, ")
    assert re.search(r"pyspark 4\.\d+\.\d+, delta-spark \d+\.\d+\.\d+\)$", line), line
