"""``rebalance-monitor decode`` (``cli_decode``) and the JSON form of records."""

from __future__ import annotations

import json

import pytest

from streaming.codec import cli_decode, decode_record, to_json, to_json_str
from tests.unit.streaming.codec import wire as w

pytestmark = pytest.mark.unit

KEY = "0001 0002 6731 0002 7430 00000003"
VALUE = "0003 000000000000002a 00000005 0000 00000190f1b2c3d4"


def test_decode_prints_the_record_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_decode(["--key-hex", KEY.replace(" ", ""), "--value-hex", VALUE]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "type": "OffsetCommit",
        "record_type": 1,
        "group_id": "g1",
        "topic": "t0",
        "partition": 3,
        "value_version": 3,
        "offset": 42,
        "leader_epoch": 5,
        "metadata": "",
        "commit_ts_ms": 1722041942996,
        "expire_ts_ms": -1,
        "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
        "unknown_tags": [],
    }


def test_decode_tombstone_with_leading_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_decode(["decode", "--key-hex", "0x0002" + w.string("grp").hex(), "--compact"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out) == {
        "type": "GroupMetadataTombstone",
        "record_type": 2,
        "group_id": "grp",
    }


def test_bad_bytes_exit_2_naming_field_and_offset(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_decode(["--key-hex", "000100026731000274300000"]) == 2
    err = capsys.readouterr().err
    assert "key.partition at byte 10: needs 4 byte(s), 2 left" in err


def test_bad_hex_and_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_decode(["--key-hex", "zz"]) == 2
    assert "--key-hex is not hex" in capsys.readouterr().err
    assert cli_decode([]) == 2
    assert "--key-hex" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_decode(["--help"]) == 0
    assert "rebalance-monitor decode" in capsys.readouterr().out


def test_unknown_records_print_their_raw_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_decode(["--key-hex", "0009abcd", "--value-hex", "0000ff", "--compact"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "type": "Unknown",
        "record_type": 9,
        "value_version": None,
        "key": "0009abcd",
        "value": "0000ff",
        "reason": "unknown record type 9",
    }


def test_to_json_nests_dataclasses_bytes_and_tuples() -> None:
    member = w.group_member_v3("m", w.subscription(3, ["t"], b"\x01\x02"), b"")
    value = w.group_metadata_value_v3("consumer", 1, "range", "m", 0, [member])
    out = to_json(decode_record(w.group_key("g"), value))
    assert out["type"] == "GroupMetadata" and out["record_type"] == 2
    m = out["members"][0]
    assert m["type"] == "MemberMetadata"
    assert m["subscription"]["user_data"] == "0102"
    assert m["subscription"]["topics"] == ["t"]
    assert m["assignment_bytes"] == ""
    assert json.loads(to_json_str(decode_record(w.group_key("g"), value))) == out
