"""JSON form of decoded records: dataclasses become objects with a ``"type"`` field (the class
name; top-level records also carry ``"record_type"``), bytes become hex strings, tuples lists.
"""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from typing import Any

__all__ = ["to_json", "to_json_str"]

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(cls))
        _FIELD_NAMES[cls] = names
    return names


def to_json(obj: Any) -> Any:
    """A JSON-ready value (dicts, lists, str, int, None) for a record or any part of one."""
    if isinstance(obj, bytes | bytearray | memoryview):
        return bytes(obj).hex()
    if isinstance(obj, tuple | list):
        return [to_json(item) for item in obj]
    if is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        names = _field_names(cls)
        out: dict[str, Any] = {"type": cls.__name__}
        if "record_type" not in names and isinstance(getattr(cls, "record_type", None), int):
            out["record_type"] = cls.record_type  # type: ignore[attr-defined]
        for name in names:
            out[name] = to_json(getattr(obj, name))
        return out
    return obj


def to_json_str(obj: Any, *, indent: int | None = None) -> str:
    """``to_json`` serialized (UTF-8 text kept as is)."""
    return json.dumps(to_json(obj), indent=indent, ensure_ascii=False)
