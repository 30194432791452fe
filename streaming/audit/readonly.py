"""``audit sql`` runs read-only statements only: the temporary views it registers are backed
by the job's Delta tables, and ``DELETE FROM rebalance_events`` would change them.

The check is lexical (comments and quoted text removed first), so it needs no Spark and runs
before Spark starts: the first keyword must be one of :data:`READ_ONLY_STATEMENTS`, and a
statement starting with ``WITH``, ``FROM`` or ``EXPLAIN`` (Spark allows ``WITH ... INSERT``
and ``FROM t INSERT ...``) must not contain a writing keyword anywhere.
"""

from __future__ import annotations

import re

from streaming.audit import QueryError

__all__ = ["READ_ONLY_STATEMENTS", "check_read_only"]

#: First keywords ``sql`` accepts; ``WITH`` and ``FROM`` also must not contain a write.
READ_ONLY_STATEMENTS: tuple[str, ...] = (
    "SELECT",
    "WITH",
    "VALUES",
    "TABLE",
    "FROM",
    "SHOW",
    "DESCRIBE",
    "DESC",
    "EXPLAIN",
)
_WRITES = re.compile(
    r"\b(INSERT|MERGE|UPDATE|DELETE|DROP|CREATE|ALTER|TRUNCATE|OPTIMIZE|VACUUM|RESTORE|"
    r"CACHE|REFRESH|SET|RESET|ADD|LOAD|MSCK|REPAIR|ANALYZE|COPY)\b",
    re.IGNORECASE,
)
# quoted text (strings, `identifiers`) and comments, scanned together so that each hides
# the others' markers ('--' inside a string, a quote inside a comment)
_HIDDEN = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|--[^\n]*|/\*.*?\*/", re.DOTALL
)
_WORD = re.compile(r"[A-Za-z_]+")


def _visible(statement: str) -> str:
    return _HIDDEN.sub(lambda m: " " if m.group(0)[0] in "-/" else "''", statement)


def check_read_only(statement: str) -> None:
    """Raise :class:`QueryError` unless ``statement`` is a query (module docstring)."""
    text = _visible(statement).strip().lstrip("(").strip()
    first_word = _WORD.match(text)
    if not first_word:
        raise QueryError("sql: the statement is empty" if not text else "sql: not a query")
    first = first_word.group(0).upper()
    write = _WRITES.search(text) if first in ("WITH", "FROM", "EXPLAIN") else None
    if first not in READ_ONLY_STATEMENTS or write:
        bad = write.group(0).upper() if write else first
        raise QueryError(
            f"sql: {bad} is not allowed: only read-only queries run here "
            f"({', '.join(READ_ONLY_STATEMENTS)})"
        )
