"""Maintenance's pure parts: what each table keeps, the properties it is given, when a closed
date counts as clustered, the job's settings and the ``maintain`` command's usage errors.
The cycles themselves run against real Delta in ``tests/spark/test_maintenance.py``."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from streaming.config import JobConfig, JobConfigError, load_config
from streaming.maintain import cli_maintain
from streaming.sinks.maintenance import (
    MAX_FILE_BYTES,
    DateFiles,
    Settings,
    StepReport,
    needs_clustering,
    table_properties,
)

pytestmark = pytest.mark.unit

D = dt.date(2026, 11, 20)


def test_each_table_keeps_its_class_of_days() -> None:
    s = Settings.of(JobConfig())
    assert [s.retention_days(t) for t in ("rebalance_events", "member_assignments")] == [400, 400]
    assert s.retention_days("group_metrics") == 400
    assert s.retention_days("offset_commits") == s.retention_days("partition_lag") == 30
    assert s.retention_days("bad_records") == 90
    assert s.retention_days("group_lag") == s.retention_days("lag_transitions") == 30


def test_the_properties_are_the_settings_in_minutes_and_the_checkpoint_interval() -> None:
    assert table_properties(Settings(delta_log_retention_hours=1.5)) == {
        "delta.logRetentionDuration": "interval 90 minutes",
        "delta.deletedFileRetentionDuration": "interval 1440 minutes",
        "delta.checkpointInterval": "100",
    }


@pytest.mark.parametrize(
    ("files", "size", "clustered"),
    [
        (1, 10_000, True),  # what Z-order leaves of a small date
        (2, MAX_FILE_BYTES + 1, True),  # of a date of just over one file's size
        (2, 10_000, True),  # one late file: not rewritten for it
        (3, 10_000, False),  # micro-batch files
        (3, 3 * MAX_FILE_BYTES - 1, True),
        (5, 3 * MAX_FILE_BYTES, False),
    ],
)
def test_a_closed_date_is_clustered_when_it_has_no_more_files_than_its_size_needs(
    files: int, size: int, clustered: bool
) -> None:
    date = DateFiles(D, files, size, files)
    assert needs_clustering(date) is not clustered
    assert math.ceil(size / MAX_FILE_BYTES) >= 1


def test_a_failed_step_says_which_table_step_and_why() -> None:
    line = StepReport("offset_commits", "vacuum", 2.04, error="boom").line()
    assert line == "[maintenance] offset_commits: vacuum FAILED after 2.0 s: boom"


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("maintenance_interval_s", -1, "maintenance_interval_s: expected seconds in [0, 604800]"),
        ("maintenance_interval_s", float("inf"), "maintenance_interval_s: expected seconds"),
        ("lag_retention_days", 1.5, "lag_retention_days: expected whole days"),
        ("audit_retention_days", -3, "audit_retention_days: expected whole days"),
        ("bad_records_retention_days", True, "bad_records_retention_days: expected whole days"),
        ("delta_log_retention_hours", 0.5, "delta_log_retention_hours: expected hours in [1,"),
        ("deleted_file_retention_hours", 0, "deleted_file_retention_hours: expected hours"),
    ],
)
def test_bad_maintenance_settings_name_the_setting(
    setting: str, value: object, message: str
) -> None:
    with pytest.raises(JobConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        JobConfig(**{setting: value})  # type: ignore[arg-type]


def test_the_settings_load_from_the_environment() -> None:
    config = load_config(
        environ={
            "REBALANCE_MONITOR_MAINTENANCE_INTERVAL_S": "0",
            "REBALANCE_MONITOR_LAG_RETENTION_DAYS": "7",
        }
    )
    assert (config.maintenance_interval_s, config.lag_retention_days) == (0, 7)
    assert (config.audit_retention_days, config.bad_records_retention_days) == (400, 90)


def test_maintain_refuses_an_unknown_table_and_a_folder_without_tables(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_maintain(["--delta-path", str(tmp_path), "--table", "nope"]) == 2
    assert "--table: nope is not a table of the job" in capsys.readouterr().err
    assert cli_maintain(["--delta-path", str(tmp_path)]) == 2
    assert "--delta-path: no Delta table of the job under" in capsys.readouterr().err
    assert cli_maintain(["--delta-path", str(tmp_path), "--bogus"]) == 2


def test_maintain_knows_every_table_of_the_job() -> None:
    from streaming.maintain import _TABLES
    from streaming.tables import TABLE_NAMES

    assert _TABLES == TABLE_NAMES
