"""Audit results as aligned text (a terminal), CSV or JSON.

=======  =============================================================================
format   shape
=======  =============================================================================
table    a header line, then one line per row; columns two spaces apart, numbers right
         aligned, ratios to two decimals, lists comma-separated, no value ``-``
csv      RFC 4180 with a header row (Python's ``csv``); lists of plain values joined
         with ``,``, nested values as JSON, no value empty
json     one JSON array of objects (column -> value), one object per line; lists stay
         lists, times are ISO-8601 strings
=======  =============================================================================

Times are rendered by the queries (ISO-8601 UTC with ``Z``), so the three formats agree.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["FORMATS", "Format", "Result", "render"]

Format = Literal["table", "csv", "json"]
FORMATS: tuple[Format, ...] = ("table", "csv", "json")


@dataclass(frozen=True)
class Result:
    """What a subcommand found: ``columns``, ``rows`` (tuples in column order) and
    ``notes`` for stderr (an empty result says why, a truncated one says so); ``footer``:
    a conclusion (``advise``'s recommendation), the last line of a ``table``, on stderr
    with the notes for ``csv`` and ``json`` (so they stay machine-readable)."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    notes: list[str] = field(default_factory=list)
    footer: str | None = None

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts (column -> value)."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def render(result: Result, fmt: Format) -> str:
    """``result`` in ``fmt`` (module docstring), without a trailing newline."""
    if fmt == "json":
        return _json(result)
    if fmt == "csv":
        return _csv(result)
    table = _table(result)
    return table if result.footer is None else f"{table}\n\n{result.footer}"


def _plain(value: Any) -> Any:
    """A JSON-able copy of ``value``."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "asDict"):  # a nested pyspark Row
        return _plain(value.asDict(recursive=True))
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _json(result: Result) -> str:
    if not result.rows:
        return "[]"
    lines = [json.dumps(_plain(r), ensure_ascii=False) for r in result.records()]
    return "[\n" + ",\n".join(lines) + "\n]"


def _text(value: Any, *, table: bool) -> str:
    """One cell: ``value`` as text."""
    if value is None:
        return "-" if table else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}" if table else repr(value)
    if isinstance(value, list | tuple) and all(
        v is None or isinstance(v, str | int | float) for v in value
    ):
        return ",".join("" if v is None else str(v) for v in value)
    plain = _plain(value)
    if isinstance(plain, dict | list):
        return json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
    return str(plain)


def _csv(result: Result) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow([_text(v, table=False) for v in row])
    return out.getvalue().rstrip("\n")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


def _table(result: Result) -> str:
    cells = [[_text(v, table=True) for v in row] for row in result.rows]
    widths = [
        max([len(name), *(len(r[i]) for r in cells)]) for i, name in enumerate(result.columns)
    ]
    numeric = [
        bool(result.rows)
        and all(row[i] is None or _is_number(row[i]) for row in result.rows)
        and any(_is_number(row[i]) for row in result.rows)
        for i in range(len(result.columns))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(result.columns), *(line(r) for r in cells)])
