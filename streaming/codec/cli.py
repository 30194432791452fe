"""``rebalance-monitor decode --key-hex K [--value-hex V]``: one record, printed as JSON.

``streaming.cli`` calls :func:`cli_decode` with the arguments after ``decode`` (a leading
``decode`` is accepted too). Exit status: 0 decoded (an ``Unknown`` record included), 2 bad
arguments, bad hex or bytes that do not decode (the message names field and byte offset).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from streaming.codec.decode import decode_record
from streaming.codec.tojson import to_json_str
from streaming.errors import ArgumentParser, ConfigError, cli_command

__all__ = ["cli_decode"]


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="rebalance-monitor decode",
        description="Decode one __consumer_offsets record (key and value bytes) to JSON.",
    )
    parser.add_argument("--key-hex", required=True, help="the record key, hex")
    parser.add_argument(
        "--value-hex", default=None, help="the record value, hex (omit for a tombstone)"
    )
    parser.add_argument("--compact", action="store_true", help="one-line JSON")
    return parser


def _hex(text: str, option: str) -> bytes:
    text = text.strip()
    if text[:2].lower() == "0x":
        text = text[2:]
    try:
        return bytes.fromhex(text)
    except ValueError as e:
        raise ConfigError(f"{option} is not hex: {e}") from None


@cli_command("rebalance-monitor decode")
def cli_decode(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["decode"]:
        args_in = args_in[1:]
    args = _parser().parse_args(args_in)
    key = _hex(args.key_hex, "--key-hex")
    value = None if args.value_hex is None else _hex(args.value_hex, "--value-hex")
    record = decode_record(key, value)  # DecodeError: exit 2 (streaming.errors.cli_command)
    print(to_json_str(record, indent=None if args.compact else 2))
    return 0
