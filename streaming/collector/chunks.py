"""Pure: a cluster-wide event (``topics``, ``end_offsets``) split into records of bounded size.

The broker refuses a record batch above the membership topic's ``max.message.bytes`` (1 MiB
by default, checked after compression), and at thousands of groups a poll's ``topics`` event
is tens of MB of JSON. :func:`pack` cuts the event by topic: each topic's entries go to one
chunk, in topic order, a chunk taking topics while its JSON stays within the bound, and each
chunk names only the groups that its topics reach (the job hands a record to each group it
names). A chunk is self-contained for its topics, so a reader applies each as it comes.

Sizes are those of the compact JSON the collector encodes (:func:`json_length`): a chunk's
length is its fixed part (the envelope, the brokers, the errors not about a topic) plus each
entry and group id with its separator, so a chunk never exceeds the bound unless one topic
(or its fixed part) alone does; such a topic gets a chunk of its own, and a topic reaching
more groups than fit beside it is repeated in several chunks, each with a share of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["Chunk", "Piece", "json_length", "pack"]


def json_length(value: Any) -> int:
    """Bytes of ``value``'s compact JSON, as :meth:`MembershipEvent.encode` writes it."""
    return len(msgspec.json.encode(value))


@dataclass(frozen=True)
class Piece:
    """One topic's share of an event: ``size`` bytes of JSON (its entries, each with a
    separator) and the groups it reaches. ``topic`` None: no entry, only groups (those that
    touch no topic, which the first chunk names)."""

    topic: str | None
    size: int
    groups: frozenset[str]


@dataclass(frozen=True)
class Chunk:
    """The topics of one record, in order, and the groups it names."""

    topics: tuple[str, ...]
    groups: frozenset[str]


def _group_bytes(groups: Iterable[str]) -> int:
    return sum(json_length(g) + 1 for g in groups)


def pack(pieces: Sequence[Piece], *, fixed: int, bound: int) -> list[Chunk]:
    """The pieces, in order, in as few chunks as the greedy fill makes: a chunk takes the
    next piece while ``fixed`` plus its pieces' sizes and its groups' ids stay within
    ``bound``. Always at least one chunk (an event without topics is one empty record)."""
    chunks: list[Chunk] = []
    topics: list[str] = []
    groups: set[str] = set()
    used = fixed

    def close() -> None:
        nonlocal used
        if topics or groups:
            chunks.append(Chunk(tuple(topics), frozenset(groups)))
        topics.clear()
        groups.clear()
        used = fixed

    for piece in pieces:
        new = piece.groups - groups
        grows = piece.size + _group_bytes(new)
        if (topics or groups) and used + grows > bound:
            close()
            new = piece.groups
            grows = piece.size + _group_bytes(new)
        if used + grows > bound and len(piece.groups) > 1:
            close()  # alone and still too long: its groups shared out over several chunks
            for share in _shares(sorted(piece.groups), bound - fixed - piece.size):
                chunks.append(Chunk(() if piece.topic is None else (piece.topic,), share))
            continue
        if piece.topic is not None:
            topics.append(piece.topic)
        groups.update(new)
        used += grows
    close()
    return chunks or [Chunk((), frozenset())]


def _shares(groups: list[str], room: int) -> list[frozenset[str]]:
    """``groups`` in runs whose ids fit ``room`` bytes (at least one id per run)."""
    out: list[frozenset[str]] = []
    run: list[str] = []
    used = 0
    for g in groups:
        size = json_length(g) + 1
        if run and used + size > room:
            out.append(frozenset(run))
            run, used = [], 0
        run.append(g)
        used += size
    if run:
        out.append(frozenset(run))
    return out
