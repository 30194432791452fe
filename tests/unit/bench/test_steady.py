"""bench/steady.py: the v4 commit value it writes is byte for byte what Kafka 4.4 wrote."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import ModuleType

import pytest

from streaming.codec.decode import decode_record
from streaming.codec.model import OffsetCommit

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "tests" / "fixtures" / "golden"


def golden_v4() -> list[tuple[bytes, bytes]]:
    out = []
    for path in sorted(GOLDEN.glob("*.json")):
        for r in json.loads(path.read_text())["records"]:
            key = bytes.fromhex(r["key"])
            if r["value"] is None or struct.unpack_from(">h", key)[0] > 1:
                continue
            value = bytes.fromhex(r["value"])
            if struct.unpack_from(">h", value)[0] == 4:
                out.append((key, value))
    return out


def test_rebuilds_every_golden_v4_commit(steady: ModuleType) -> None:
    pairs = golden_v4()
    assert len(pairs) > 100
    for key, value in pairs:
        c = decode_record(key, value)
        assert isinstance(c, OffsetCommit)
        topic_id = steady.topic_id_bytes(c.topic_id)
        assert (
            steady.offset_commit_value_v4(
                c.offset, c.leader_epoch, c.metadata, c.commit_ts_ms, topic_id
            )
            == value
        )
        assert steady.offset_commit_key(c.group_id, c.topic, c.partition) == key
    assert steady.check_golden_v4() == len(pairs)


def test_one_value_spelled_out(steady: ModuleType) -> None:
    # range.json, offset 9: golden-range-orders 2 at offset 5, leader epoch 0, no metadata
    topic_id = steady.topic_id_bytes("dyXMUHoMQvOULfvr59TBqA")
    assert topic_id.hex() == "7725cc507a0c42f3942dfbebe7d4c1a8"
    value = steady.offset_commit_value_v4(5, 0, "", 0x1A1FCB6FF1D, topic_id)
    golden = json.loads((GOLDEN / "range.json").read_text())["records"][9]["value"]
    assert (
        value.hex()
        == golden
        == ("000400000000000000050000000001000001a1fcb6ff1d0100107725cc507a0c42f3942dfbebe7d4c1a8")
    )
    # a zero topic id writes an empty tagged-field section; metadata is a compact string
    assert steady.offset_commit_value_v4(1, -1, "ab", 2, bytes(16)).hex() == (
        "00040000000000000001ffffffff036162000000000000000200"
    )


def test_backlog_shape(steady: ModuleType, tmp_path: Path) -> None:
    backlog = steady.write_backlog(tmp_path / "b.bin", 10, 20, now_ms=1_800_000_000_000)
    assert backlog.rounds == 4
    assert backlog.commits == 10 * 4 * 20
    assert all(len(parts) == 20 for parts in backlog.last.values())
    assert set(backlog.topics.values()) == {10}
    data = (tmp_path / "b.bin").read_bytes()
    at = n = 0
    last_ts = 0
    while at < len(data):
        _partition, ts, klen = struct.unpack_from(">iqi", data, at)
        at += 16 + klen
        (vlen,) = struct.unpack_from(">i", data, at)
        at += 4 + max(vlen, 0)
        assert ts >= last_ts  # time order
        last_ts = ts
        n += 1
    assert n == backlog.records
    assert last_ts == backlog.last_ts_ms < 1_800_000_000_000


def test_the_commit_check_asks_what_the_table_keeps(steady: ModuleType) -> None:
    """Every partition's last commit, or (``kept`` over several micro-batches) a commit of
    every partition; the job's setting read from its arguments."""
    expected = {"g": {("t", 0): 90, ("t", 1): 80}}
    first_runs = {"g": {("t", 0): 40, ("t", 1): 30}}
    assert steady.missing_commits(expected, first_runs, last=False) == []
    assert steady.missing_commits(expected, first_runs, last=True) == [
        ("g", ("t", 0), 90, 40),
        ("g", ("t", 1), 80, 30),
    ]
    one_lost = {"g": {("t", 0): 90}}
    assert steady.missing_commits(expected, one_lost, last=False) == [("g", ("t", 1), 80, None)]
    assert steady.missing_commits(expected, one_lost, last=True) == [("g", ("t", 1), 80, None)]
    assert steady.offset_commits_history([]) == "kept"
    assert steady.offset_commits_history(["--once", "--offset-commits-history", "latest"]) == (
        "latest"
    )
    assert steady.offset_commits_history(["--offset-commits-history=every"]) == "every"
