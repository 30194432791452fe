"""The sink's pause hook (``streaming.sinks.pause``): what it parses and refuses, where it holds
(a real thread held, its marker written), and that it is a no-op when unset. The kills at
its points are ``tests/spark/test_restart.py``."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from streaming.sinks import SinkError
from streaming.sinks.pause import MARKER_ENV, PAUSE_ENV, PausePoint, Pauser, PauseSpecError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("before-append", PausePoint("before-append")),
        ("after-append:partition_lag", PausePoint("after-append", "partition_lag")),
        ("after-append:offset_commits@7", PausePoint("after-append", "offset_commits", 7)),
        ("after-batch@3", PausePoint("after-batch", None, 3)),
        ("maintenance:offset_commits@1", PausePoint("maintenance", "offset_commits", 1)),
    ],
)
def test_the_spec_is_parsed(spec: str, expected: PausePoint) -> None:
    assert PausePoint.parse(spec) == expected


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("during-append", "'during-append' is not one of"),
        ("after-append@x", "@x is not a batch id"),
        ("after-append@-1", "@-1 is not a batch id"),
        ("after-batch:offset_commits", "after-batch takes no table"),
    ],
)
def test_a_bad_spec_names_what_is_wrong(spec: str, named: str) -> None:
    with pytest.raises(PauseSpecError, match=named) as info:
        PausePoint.parse(spec)
    assert isinstance(info.value, SinkError)
    assert PAUSE_ENV in str(info.value)


def test_unset_it_never_holds() -> None:
    pauser = Pauser.from_env({})
    assert pauser.where is None
    for point in ("before-append", "after-append", "after-batch"):
        pauser.reach(point, 0, "offset_commits")


def test_a_point_without_a_marker_file_is_refused() -> None:
    with pytest.raises(PauseSpecError, match=MARKER_ENV):
        Pauser.from_env({PAUSE_ENV: "after-batch"})


def _reach_in_thread(pauser: Pauser, *args: object) -> threading.Thread:
    thread = threading.Thread(target=pauser.reach, args=args, daemon=True)
    thread.start()
    return thread


def test_it_holds_once_at_the_named_table_and_batch(tmp_path: Path) -> None:
    marker = tmp_path / "held.json"
    pauser = Pauser.from_env({PAUSE_ENV: "after-append:partition_lag@2", MARKER_ENV: str(marker)})
    # not this point, not this table, an earlier batch: each returns at once
    pauser.reach("before-append", 5, "partition_lag")
    pauser.reach("after-append", 5, "offset_commits")
    pauser.reach("after-append", 1, "partition_lag")
    assert not marker.exists()

    held = _reach_in_thread(pauser, "after-append", 3, "partition_lag")
    held.join(timeout=0.5)
    for _ in range(100):
        if marker.exists():
            break
        held.join(timeout=0.1)
    assert held.is_alive(), "the named point did not hold"
    assert json.loads(marker.read_text()) == {
        "point": "after-append",
        "table": "partition_lag",
        "batch_id": 3,
        "pid": os.getpid(),
    }
    assert [p.name for p in tmp_path.iterdir()] == ["held.json"]  # the partial file renamed

    # the point again (another table's thread of the same batch, a later batch): goes on
    other = _reach_in_thread(pauser, "after-append", 3, "partition_lag")
    other.join(timeout=5)
    assert not other.is_alive()
    assert held.is_alive()
