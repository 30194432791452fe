"""``docs/tables.md`` documents every column of every table as :mod:`streaming.tables`
defines it: name, type, nullability, in the table's order, each with its meaning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from streaming import tables as t

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
#: A row of a column table: | `name` | `type` | yes/no | meaning |
_ROW = re.compile(r"^\| `([a-z_]+)` \| `([^`]+)` \| (yes|no) \| (.*) \|$")


def _short(dtype: DataType) -> str:
    """A type as the doc spells it: a struct's fields are told in the meaning."""
    if isinstance(dtype, StructType):
        return "struct"
    if isinstance(dtype, ArrayType):
        return f"array<{_short(dtype.elementType)}>"
    if isinstance(dtype, MapType):
        return f"map<{_short(dtype.keyType)},{_short(dtype.valueType)}>"
    return dtype.simpleString()


def documented(text: str) -> dict[str, list[tuple[str, str, bool, str]]]:
    """Each ``### `table``` section's column rows: (name, type, nullable, meaning)."""
    parts = re.split(r"^### `(\w+)`$", text, flags=re.MULTILINE)
    out: dict[str, list[tuple[str, str, bool, str]]] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        rows = [_ROW.match(line) for line in body.splitlines()]
        out[name] = [(m[1], m[2].replace(" ", ""), m[3] == "yes", m[4].strip()) for m in rows if m]
    return out


def differences(text: str, table: str) -> list[str]:
    """How ``table``'s column rows in ``text`` differ from its schema (empty: none)."""
    doc = documented(text)
    if table not in doc:
        return [f"no section ### `{table}`"]
    got = [(name, kind, nullable) for name, kind, nullable, _ in doc[table]]
    want = [(f.name, _short(f.dataType), f.nullable) for f in t.schema(table).fields]
    out = [f"doc {g} != schema {w}" for g, w in zip(got, want, strict=False) if g != w]
    if len(got) != len(want):
        out.append(f"{len(got)} columns documented, {len(want)} in the schema")
    out += [f"{name}: no meaning" for name, _, _, meaning in doc[table] if not meaning]
    return out


@pytest.mark.parametrize("table", t.TABLE_NAMES)
def test_the_doc_lists_each_column_as_the_schema_defines_it(table: str) -> None:
    assert differences((ROOT / "docs" / "tables.md").read_text(), table) == []


def test_a_column_the_doc_gets_wrong_is_found() -> None:
    text = (ROOT / "docs" / "tables.md").read_text()
    wrong = text.replace(
        "| `max_lag_seconds` | `double` | yes |", "| `max_lag_seconds` | `bigint` | yes |"
    )
    assert wrong != text
    assert differences(wrong, "group_lag") == [
        "doc ('max_lag_seconds', 'bigint', True) != schema ('max_lag_seconds', 'double', True)"
    ]
    fewer = re.sub(r"^\| `partitions_err` \|.*\n", "", text, flags=re.MULTILINE)
    assert any("columns documented" in d for d in differences(fewer, "group_lag"))
