"""Pure-Python decoder of every record the Kafka group coordinator writes to
``__consumer_offsets`` (Kafka 3.x and 4.x up to 4.4.0): bytes in, frozen records out.

Pipeline of one record::

    decode_record(key, value)                           decode.py
      ├─ int16 record type → key struct                 keys.py
      ├─ value None → OffsetCommitTombstone / GroupMetadataTombstone / Tombstone
      ├─ int16 value version → one function per version
      │    0, 1   offset commits, v0-v4                 offsets.py
      │    2      classic group metadata, v0-v4         group_metadata.py
      │             └─ member payloads                  consumer_protocol.py
      │    3-8,16 KIP-848 consumer groups               kip848.py
      │    10-15  share groups                          share.py
      │    17,19-23 streams groups                      streams.py
      └─ unknown type / version → Unknown (raw bytes)

    record_route(key, value)                            decode.py
      └─ the type's name and the group, from the key and the value's version alone

Wire primitives are in ``reader.py``, the record classes in ``model.py``, errors (one root,
``CodecError``; ``DecodeError`` names field and byte offset) in ``errors.py``, JSON output in
``tojson.py`` and the ``decode`` command in ``cli.py``.
"""

from __future__ import annotations

from streaming.codec.cli import cli_decode
from streaming.codec.consumer_protocol import (
    decode_assignment,
    decode_cooperative_sticky_user_data,
    decode_sticky_user_data,
    decode_subscription,
)
from streaming.codec.decode import RECORD_TYPES, decode_record, record_route
from streaming.codec.errors import CodecError, DecodeError, MalformedError, TruncatedError
from streaming.codec.model import Record
from streaming.codec.tojson import to_json, to_json_str

__all__ = [
    "RECORD_TYPES",
    "CodecError",
    "DecodeError",
    "MalformedError",
    "Record",
    "TruncatedError",
    "cli_decode",
    "decode_assignment",
    "decode_cooperative_sticky_user_data",
    "decode_record",
    "decode_sticky_user_data",
    "decode_subscription",
    "record_route",
    "to_json",
    "to_json_str",
]
