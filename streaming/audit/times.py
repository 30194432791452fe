"""Time arguments: ISO-8601 times, dates and relative offsets -> ms since the Unix epoch.

=====================================  ==============================================
accepted                               meaning
=====================================  ==============================================
``2026-11-21T10:00:00Z``               that instant (any ISO-8601 offset, ``Z`` = UTC)
``2026-11-21T10:00``, ``... 10:00``    a time without offset: UTC
``2026-11-21``                         midnight UTC at the start of that date
``-30s``, ``-30m``, ``-1h``, ``-2d``,  that long before now (``s``, ``m``, ``h``, ``d``,
``-1w``, ``-1.5h``                     ``w``; a decimal amount is fine)
``now``                                now
=====================================  ==============================================
"""

from __future__ import annotations

import datetime as dt
import re

from streaming.audit import BadTimeError

__all__ = ["TIME_HELP", "format_ms", "parse_time"]

TIME_HELP = "ISO-8601 (2026-11-21T10:00:00Z; no offset = UTC), a date (2026-11-21), -1h/-30m/-2d"

_RELATIVE = re.compile(r"-\s*(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def parse_time(text: str, now_ms: int, *, option: str = "time") -> int:
    """``text`` (module docstring) as ms since the epoch; ``now_ms`` anchors relative forms.
    Raises :class:`BadTimeError` naming ``option`` and the value."""
    value = text.strip()
    if value.lower() == "now":
        return now_ms
    relative = _RELATIVE.fullmatch(value.lower())
    if relative:
        amount, unit = relative.groups()
        return now_ms - round(float(amount) * _UNIT_MS[unit])
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise BadTimeError(
            f"{option}: cannot parse {text!r} as a time; expected {TIME_HELP}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return round(parsed.timestamp() * 1000)


def format_ms(ts_ms: int) -> str:
    """``2026-11-21T06:06:52.572Z``: ms since the epoch as ISO-8601 UTC, ms precision."""
    when = dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts_ms % 1000:03d}Z"
