"""Errors raised by ``streaming.codec``.

Hierarchy::

    CodecError                    root of every error the codec raises
    └── DecodeError (ValueError)  the bytes are not a valid record; ``field`` is the path of
        │                         the field that failed (``value.members[2].subscription.topics``)
        │                         and ``offset`` the byte offset in the key or value buffer
        ├── TruncatedError        the buffer ends inside the field
        └── MalformedError        the field's bytes are invalid: negative or oversized length
                                  or count, null in a non-nullable field, invalid UTF-8, varint
                                  overflow, a tagged field whose payload does not fill its size

Unknown record types and value versions are *not* errors: they decode to
:class:`streaming.codec.model.Unknown` records, as Kafka's own loader skips them.
"""

from __future__ import annotations

from streaming.errors import RebalanceMonitorError


class CodecError(RebalanceMonitorError):
    """Root of every error raised by ``streaming.codec``."""


class DecodeError(CodecError, ValueError):
    """The bytes are not a valid record.

    ``field`` names the failing field as a path from ``key`` or ``value``; ``offset`` is the
    byte offset, in that buffer, where the field starts (or where reading stopped).
    """

    def __init__(self, field: str, offset: int, reason: str) -> None:
        super().__init__(f"{field} at byte {offset}: {reason}")
        self.field = field
        self.offset = offset
        self.reason = reason

    def __reduce__(self) -> tuple[type[DecodeError], tuple[str, int, str]]:
        return (type(self), (self.field, self.offset, self.reason))

    def within(self, prefix: str) -> DecodeError:
        """The same error with ``prefix`` prepended to the field path."""
        sep = "" if self.field.startswith("[") else "."
        return type(self)(f"{prefix}{sep}{self.field}", self.offset, self.reason)


class TruncatedError(DecodeError):
    """The buffer ends inside a field."""


class MalformedError(DecodeError):
    """A field's bytes are present but invalid."""
