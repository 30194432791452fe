"""Wire primitives of Kafka's generated-message encoding, read from a byte buffer.

All integers are big-endian and signed unless named ``u...``. Non-flexible versions use
int16-length strings and int32-length bytes and arrays (-1 = null); flexible versions use
*compact* forms (unsigned-varint ``N + 1``, 0 = null) and end every struct with a tagged-field
section (uvarint count, then per field uvarint tag, uvarint size and the payload).

:class:`Reader` walks ``buf[pos:end]`` and raises :class:`~streaming.codec.errors.DecodeError`
(never anything else) naming the field and the byte offset in ``buf`` where it failed. The
limits are Kafka's: strings of at most 32767 bytes, collections of at most 1,000,000 elements
and never more elements than bytes left, at most 10,000 tagged fields. An unsigned varint
longer than 5 bytes or beyond the int32 range is malformed (Java would wrap it negative).

UUIDs are returned in Kafka's text form (``Uuid.toString``: URL-safe base64 without padding,
22 characters), the form the Kafka tools print.
"""

from __future__ import annotations

import struct
from base64 import urlsafe_b64encode
from collections.abc import Callable
from typing import TypeVar

from streaming.codec.errors import DecodeError, MalformedError, TruncatedError
from streaming.codec.model import TaggedField

__all__ = [
    "MAX_COLLECTION_SIZE",
    "MAX_STRING_LENGTH",
    "MAX_TAGGED_FIELDS",
    "ZERO_UUID",
    "Reader",
    "int32s",
    "uuid_to_str",
]

MAX_STRING_LENGTH = 0x7FFF
MAX_COLLECTION_SIZE = 1_000_000
MAX_TAGGED_FIELDS = 10_000

I16 = struct.Struct(">h")
U16 = struct.Struct(">H")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

INT32_ARRAYS = tuple(struct.Struct(f">{n}i") for n in range(256))
"""Precompiled readers of ``n`` int32s (partition lists are short)."""
_INT16_ARRAYS = tuple(struct.Struct(f">{n}h") for n in range(64))


def int32s(buf: bytes, pos: int, n: int) -> tuple[int, ...]:
    """``n`` big-endian int32s at ``buf[pos:]`` (bounds already checked)."""
    if n < 256:
        return INT32_ARRAYS[n].unpack_from(buf, pos)
    return struct.unpack_from(f">{n}i", buf, pos)


T = TypeVar("T")

TagSpan = tuple[int, int, int]
"""One tagged field as ``(tag, payload_start, payload_end)`` offsets into the buffer."""


def uuid_to_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()`` of 16 bytes (most-significant long first)."""
    return urlsafe_b64encode(raw)[:22].decode("ascii")


class Reader:
    """A cursor over ``buf[pos:end]``; every method takes the field name for its errors."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    # -- errors -------------------------------------------------------------------------------

    def truncated(self, field: str, need: int, at: int | None = None) -> DecodeError:
        pos = self.pos if at is None else at
        return TruncatedError(field, pos, f"needs {need} byte(s), {self.end - pos} left")

    def done(self, field: str) -> None:
        """Require the reader to be exhausted (tagged-field payloads must fill their size)."""
        if self.pos != self.end:
            raise MalformedError(
                field, self.pos, f"{self.end - self.pos} unread byte(s) in a tagged field"
            )

    # -- fixed width --------------------------------------------------------------------------

    def int8(self, field: str) -> int:
        pos = self.pos
        if pos >= self.end:
            raise self.truncated(field, 1)
        self.pos = pos + 1
        b = self.buf[pos]
        return b - 256 if b > 127 else b

    def int16(self, field: str) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self.truncated(field, 2)
        self.pos = pos + 2
        v: int = I16.unpack_from(self.buf, pos)[0]
        return v

    def uint16(self, field: str) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self.truncated(field, 2)
        self.pos = pos + 2
        v: int = U16.unpack_from(self.buf, pos)[0]
        return v

    def int32(self, field: str) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise self.truncated(field, 4)
        self.pos = pos + 4
        v: int = I32.unpack_from(self.buf, pos)[0]
        return v

    def int64(self, field: str) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            raise self.truncated(field, 8)
        self.pos = pos + 8
        v: int = I64.unpack_from(self.buf, pos)[0]
        return v

    def uuid(self, field: str) -> str:
        pos = self.pos
        stop = pos + 16
        if stop > self.end:
            raise self.truncated(field, 16)
        self.pos = stop
        return urlsafe_b64encode(self.buf[pos:stop])[:22].decode("ascii")

    # -- varints ------------------------------------------------------------------------------

    def uvarint(self, field: str) -> int:
        """Unsigned varint of at most 5 bytes, within the int32 range (Kafka reads it into a
        Java ``int``: larger values would wrap negative there; here they are malformed)."""
        pos = self.pos
        if pos >= self.end:
            raise self.truncated(field, 1)
        b = self.buf[pos]
        if b < 0x80:
            self.pos = pos + 1
            return b
        return self._uvarint_long(field, 5, 0x7FFFFFFF)

    def _uvarint_long(self, field: str, max_bytes: int, limit: int) -> int:
        buf, start, end = self.buf, self.pos, self.end
        pos, shift, result = start, 0, 0
        while True:
            if pos >= end:
                raise TruncatedError(field, start, "varint runs past the end of the buffer")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if pos - start >= max_bytes:
                raise MalformedError(field, start, f"varint longer than {max_bytes} bytes")
        if result > limit:
            raise MalformedError(field, start, f"varint {result} exceeds {limit}")
        self.pos = pos
        return result

    def varint(self, field: str) -> int:
        """Zig-zag signed varint (int32: up to 5 bytes, 32 bits)."""
        pos = self.pos
        if pos >= self.end:
            raise self.truncated(field, 1)
        v = self.buf[pos]
        if v < 0x80:
            self.pos = pos + 1
        else:
            v = self._uvarint_long(field, 5, 0xFFFFFFFF)
        return (v >> 1) ^ -(v & 1)

    def uvarlong(self, field: str) -> int:
        """Unsigned varint of at most 10 bytes and 64 bits."""
        pos = self.pos
        if pos >= self.end:
            raise self.truncated(field, 1)
        b = self.buf[pos]
        if b < 0x80:
            self.pos = pos + 1
            return b
        return self._uvarint_long(field, 10, 0xFFFFFFFFFFFFFFFF)

    def varlong(self, field: str) -> int:
        """Zig-zag signed varint (int64)."""
        v = self.uvarlong(field)
        return (v >> 1) ^ -(v & 1)

    # -- strings ------------------------------------------------------------------------------

    def _string_body(self, field: str, at: int, start: int, n: int) -> str:
        stop = start + n
        if stop > self.end:
            raise TruncatedError(
                field, at, f"string of {n} byte(s), only {self.end - start} byte(s) left"
            )
        self.pos = stop
        try:
            return self.buf[start:stop].decode()
        except UnicodeDecodeError as e:
            raise MalformedError(field, start + e.start, f"invalid UTF-8 ({e.reason})") from None

    def string(self, field: str) -> str:
        """int16 length then UTF-8; a negative length (null) is malformed."""
        buf, pos, end = self.buf, self.pos, self.end
        start = pos + 2
        if start <= end:
            n = buf[pos] << 8 | buf[pos + 1]
            stop = start + n
            if n < 0x8000 and stop <= end:
                try:
                    text = buf[start:stop].decode()
                except UnicodeDecodeError:
                    pass
                else:
                    self.pos = stop
                    return text
        return self._string_error(field)

    def _string_error(self, field: str) -> str:
        """The error of a non-nullable int16-length string at ``pos`` (always raises)."""
        pos = self.pos
        if pos + 2 > self.end:
            raise self.truncated(field, 2)
        n: int = I16.unpack_from(self.buf, pos)[0]
        if n < 0:
            raise MalformedError(field, pos, "null in a non-nullable string")
        return self._string_body(field, pos, pos + 2, n)

    def lenient_string(self, field: str) -> str:
        """``string``, but invalid UTF-8 becomes U+FFFD as in Java's ``new String(bytes,
        UTF_8)`` (for the sticky assignor's user data, decoded as Java does)."""
        pos = self.pos
        if pos + 2 > self.end:
            raise self.truncated(field, 2)
        n: int = I16.unpack_from(self.buf, pos)[0]
        if n < 0:
            raise MalformedError(field, pos, "null in a non-nullable string")
        start, stop = pos + 2, pos + 2 + n
        if stop > self.end:
            raise TruncatedError(
                field, pos, f"string of {n} byte(s), only {self.end - start} byte(s) left"
            )
        self.pos = stop
        return self.buf[start:stop].decode(errors="replace")

    def nullable_string(self, field: str) -> str | None:
        pos = self.pos
        if pos + 2 > self.end:
            raise self.truncated(field, 2)
        n: int = I16.unpack_from(self.buf, pos)[0]
        if n < 0:
            self.pos = pos + 2
            return None
        return self._string_body(field, pos, pos + 2, n)

    def compact_string(self, field: str) -> str:
        pos = self.pos
        n = self.uvarint(field) - 1
        if n < 0:
            raise MalformedError(field, pos, "null in a non-nullable string")
        if n > MAX_STRING_LENGTH:
            raise MalformedError(field, pos, f"string length {n} exceeds {MAX_STRING_LENGTH}")
        return self._string_body(field, pos, self.pos, n)

    def compact_nullable_string(self, field: str) -> str | None:
        pos = self.pos
        n = self.uvarint(field) - 1
        if n < 0:
            return None
        if n > MAX_STRING_LENGTH:
            raise MalformedError(field, pos, f"string length {n} exceeds {MAX_STRING_LENGTH}")
        return self._string_body(field, pos, self.pos, n)

    # -- bytes --------------------------------------------------------------------------------

    def _bytes_span(self, field: str, at: int, n: int) -> tuple[int, int]:
        start = self.pos
        stop = start + n
        if stop > self.end:
            raise TruncatedError(
                field, at, f"bytes of length {n}, only {self.end - start} byte(s) left"
            )
        self.pos = stop
        return start, stop

    def bytes_span(self, field: str) -> tuple[int, int]:
        """int32 length then the bytes, returned as ``(start, stop)``; null is malformed."""
        pos = self.pos
        n = self.int32(field)
        if n < 0:
            raise MalformedError(field, pos, "null in non-nullable bytes")
        return self._bytes_span(field, pos, n)

    def compact_bytes_span(self, field: str) -> tuple[int, int]:
        pos = self.pos
        n = self.uvarint(field) - 1
        if n < 0:
            raise MalformedError(field, pos, "null in non-nullable bytes")
        return self._bytes_span(field, pos, n)

    def bytes_(self, field: str) -> bytes:
        start, stop = self.bytes_span(field)
        return self.buf[start:stop]

    def nullable_bytes(self, field: str) -> bytes | None:
        pos = self.pos
        n = self.int32(field)
        if n < 0:
            return None
        start, stop = self._bytes_span(field, pos, n)
        return self.buf[start:stop]

    def compact_bytes(self, field: str) -> bytes:
        start, stop = self.compact_bytes_span(field)
        return self.buf[start:stop]

    def compact_nullable_bytes(self, field: str) -> bytes | None:
        pos = self.pos
        n = self.uvarint(field) - 1
        if n < 0:
            return None
        start, stop = self._bytes_span(field, pos, n)
        return self.buf[start:stop]

    # -- arrays -------------------------------------------------------------------------------

    def _check_count(self, field: str, at: int, n: int) -> int:
        if n > self.end - self.pos:
            raise TruncatedError(
                field, at, f"array of {n} element(s), only {self.end - self.pos} byte(s) left"
            )
        if n > MAX_COLLECTION_SIZE:
            raise MalformedError(field, at, f"array of {n} elements exceeds {MAX_COLLECTION_SIZE}")
        return n

    def array_len(self, field: str) -> int:
        """int32 element count; null (negative) is malformed, more elements than bytes too."""
        pos = self.pos
        n = self.int32(field)
        if n < 0:
            raise MalformedError(field, pos, "null in a non-nullable array")
        return self._check_count(field, pos, n)

    def nullable_array_len(self, field: str) -> int | None:
        pos = self.pos
        n = self.int32(field)
        if n < 0:
            return None
        return self._check_count(field, pos, n)

    def compact_array_len(self, field: str) -> int:
        pos = self.pos
        n = self.uvarint(field) - 1
        if n < 0:
            raise MalformedError(field, pos, "null in a non-nullable array")
        return self._check_count(field, pos, n)

    def compact_nullable_array_len(self, field: str) -> int | None:
        pos = self.pos
        n = self.uvarint(field) - 1
        if n < 0:
            return None
        return self._check_count(field, pos, n)

    def _int32_items(self, field: str, n: int) -> tuple[int, ...]:
        pos = self.pos
        stop = pos + 4 * n
        if stop > self.end:
            raise self.truncated(field, 4 * n)
        self.pos = stop
        return int32s(self.buf, pos, n)

    def int32_array(self, field: str) -> tuple[int, ...]:
        return self._int32_items(field, self.array_len(field))

    def compact_int32_array(self, field: str) -> tuple[int, ...]:
        return self._int32_items(field, self.compact_array_len(field))

    def compact_nullable_int32_array(self, field: str) -> tuple[int, ...] | None:
        n = self.compact_nullable_array_len(field)
        return None if n is None else self._int32_items(field, n)

    def compact_int16_array(self, field: str) -> tuple[int, ...]:
        n = self.compact_array_len(field)
        pos = self.pos
        stop = pos + 2 * n
        if stop > self.end:
            raise self.truncated(field, 2 * n)
        self.pos = stop
        if n < 64:
            return _INT16_ARRAYS[n].unpack_from(self.buf, pos)
        return struct.unpack_from(f">{n}h", self.buf, pos)

    def string_array(self, field: str) -> tuple[str, ...]:
        """int32-counted array of non-nullable strings."""
        buf, pos, end = self.buf, self.pos, self.end
        if pos + 4 <= end:
            count: int = I32.unpack_from(buf, pos)[0]
            pos += 4
            if 0 <= count <= end - pos and count <= MAX_COLLECTION_SIZE:
                out = []
                for _ in range(count):
                    start = pos + 2
                    if start > end:
                        break
                    n = buf[pos] << 8 | buf[pos + 1]
                    pos = start + n
                    if n >= 0x8000 or pos > end:
                        break
                    try:
                        out.append(buf[start:pos].decode())
                    except UnicodeDecodeError:
                        break
                else:
                    self.pos = pos
                    return tuple(out)
        # the precise error, element by element
        n = self.array_len(field)
        string = self.string
        return tuple([string(field) for _ in range(n)])

    def compact_string_array(self, field: str) -> tuple[str, ...]:
        n = self.compact_array_len(field)
        string = self.compact_string
        return tuple([string(field) for _ in range(n)])

    def structs(self, field: str, read: Callable[[Reader], T]) -> tuple[T, ...]:
        """int32-counted array of structs; an element's error is prefixed ``field[i]``."""
        return self._structs(field, self.array_len(field), read)

    def compact_structs(self, field: str, read: Callable[[Reader], T]) -> tuple[T, ...]:
        return self._structs(field, self.compact_array_len(field), read)

    def compact_nullable_structs(
        self, field: str, read: Callable[[Reader], T]
    ) -> tuple[T, ...] | None:
        n = self.compact_nullable_array_len(field)
        return None if n is None else self._structs(field, n, read)

    def _structs(self, field: str, n: int, read: Callable[[Reader], T]) -> tuple[T, ...]:
        if n == 0:
            return ()
        out = []
        i = 0
        try:
            for i in range(n):  # noqa: B007 (i names the failing element)
                out.append(read(self))
        except DecodeError as e:
            raise e.within(f"{field}[{i}]") from None
        return tuple(out)

    # -- tagged fields ------------------------------------------------------------------------

    def tagged_fields(self, field: str = "_tagged_fields") -> list[TagSpan]:
        """The tagged-field section: ``[(tag, start, stop), ...]`` (payloads are skipped)."""
        pos = self.pos
        count = self.uvarint(field)
        if count == 0:
            return []
        if count > self.end - self.pos:
            raise TruncatedError(
                field, pos, f"{count} tagged field(s), only {self.end - self.pos} byte(s) left"
            )
        if count > MAX_TAGGED_FIELDS:
            raise MalformedError(field, pos, f"{count} tagged fields exceed {MAX_TAGGED_FIELDS}")
        spans = []
        for _ in range(count):
            tag = self.uvarint(field)
            at = self.pos
            size = self.uvarint(f"{field}[tag {tag}].size")
            start = self.pos
            stop = start + size
            if stop > self.end:
                raise TruncatedError(
                    f"{field}[tag {tag}]",
                    at,
                    f"payload of {size} byte(s), only {self.end - start} byte(s) left",
                )
            self.pos = stop
            spans.append((tag, start, stop))
        return spans

    def unknown_tags(self, field: str = "_tagged_fields") -> tuple[TaggedField, ...]:
        """A tagged-field section where no tag is known: every field is kept raw."""
        pos = self.pos
        if pos < self.end and self.buf[pos] == 0:  # the usual empty section
            self.pos = pos + 1
            return ()
        buf = self.buf
        return tuple([TaggedField(t, buf[a:b]) for t, a, b in self.tagged_fields(field)])

    def sub(self, start: int, stop: int) -> Reader:
        """A reader over one tagged-field payload (same buffer, absolute offsets)."""
        return Reader(self.buf, start, stop)
