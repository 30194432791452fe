"""Seeded mutations of valid records, for the fuzz test and the Kafka-vs-Python differential.

Each mutation keeps most of a real record and breaks one thing: truncation, bit flips, byte
and integer overwrites with boundary values (lengths of -1, 0x7FFF, 2^31-1 ...), inserted,
deleted or duplicated ranges, another record type or value version, a swapped value, a
tombstone, or plain random bytes.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator, Sequence

Pair = tuple[bytes, bytes | None]

_INT16S = (-1, -2, 0, 1, 2, 3, 4, 5, 0x7FFF, -0x8000, 100)
_INT32S = (-1, -2, 0, 1, 0x7FFFFFFF, -0x80000000, 0x10000, 1_000_001, 3)
_BYTES = (0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF, 0xFE, 0xC0, 0xED, 0xF0)


def _mutate_bytes(rnd: random.Random, data: bytes, others: Sequence[Pair]) -> bytes:
    b = bytearray(data)
    n = len(b)
    kind = rnd.randrange(11)
    if kind == 0 or n == 0:  # truncate
        return bytes(b[: rnd.randrange(n + 1)])
    if kind == 1:  # flip bits
        for _ in range(rnd.randint(1, 3)):
            b[rnd.randrange(n)] ^= 1 << rnd.randrange(8)
    elif kind == 2:  # a boundary byte
        b[rnd.randrange(n)] = rnd.choice(_BYTES)
    elif kind == 3 and n >= 2:  # a boundary int16 (non-flexible lengths, versions)
        i = rnd.randrange(n - 1)
        b[i : i + 2] = struct.pack(">h", rnd.choice(_INT16S))
    elif kind == 4 and n >= 4:  # a boundary int32 (array counts, bytes lengths)
        i = rnd.randrange(n - 3)
        b[i : i + 4] = struct.pack(">i", rnd.choice(_INT32S))
    elif kind == 5:  # insert bytes
        i = rnd.randrange(n + 1)
        b[i:i] = rnd.randbytes(rnd.randint(1, 6))
    elif kind == 6:  # delete a range
        i = rnd.randrange(n)
        del b[i : i + rnd.randint(1, 8)]
    elif kind == 7:  # duplicate a range
        i = rnd.randrange(n)
        j = min(n, i + rnd.randint(1, 16))
        b[j:j] = b[i:j]
    elif kind == 8:  # a long varint (flexible lengths)
        i = rnd.randrange(n)
        b[i : i + 1] = bytes(rnd.choice(((0xFF,) * 5, (0x80,) * 6, (0xFF, 0xFF, 0xFF, 0xFF, 0x0F))))
    elif kind == 9:  # splice another record's tail
        other = rnd.choice(others)[1] or b""
        i = rnd.randrange(n + 1)
        b[i:] = other[rnd.randrange(len(other) + 1) :]
    else:  # random tail
        i = rnd.randrange(n + 1)
        b[i:] = rnd.randbytes(rnd.randint(0, 12))
    return bytes(b)


def mutate(rnd: random.Random, record: Pair, others: Sequence[Pair]) -> Pair:
    key, value = record
    kind = rnd.randrange(10)
    if kind <= 4 and value is not None:
        return key, _mutate_bytes(rnd, value, others)
    if kind == 5:
        return _mutate_bytes(rnd, key, others), value
    if kind == 6:  # another record type (known or not)
        return struct.pack(">h", rnd.choice((*range(-1, 26), 0x7FFF))) + key[2:], value
    if kind == 7 and value is not None:  # another value version
        return key, struct.pack(">h", rnd.choice((-1, 0, 1, 2, 3, 4, 5, 0x7FFF))) + value[2:]
    if kind == 8:  # someone else's value, or a tombstone
        return key, rnd.choice((None, rnd.choice(others)[1]))
    return rnd.randbytes(rnd.randint(0, 12)), rnd.choice((None, rnd.randbytes(rnd.randint(0, 40))))


def mutations(seed: int, corpus: Sequence[Pair], count: int) -> Iterator[Pair]:
    """``count`` mutated records (each of one to three mutations) drawn from ``corpus``."""
    rnd = random.Random(seed)
    for _ in range(count):
        record = rnd.choice(corpus)
        for _ in range(rnd.choice((1, 1, 1, 2, 3))):
            record = mutate(rnd, record, corpus)
        yield record
