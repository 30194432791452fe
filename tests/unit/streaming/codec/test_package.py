"""The codec is pure Python: bytes in, records out, nothing but the standard library (and
``streaming.errors``, the exception root, itself standard library only)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import streaming.codec

pytestmark = pytest.mark.unit

ROOT = Path(streaming.codec.__file__).parent


def test_codec_imports_only_the_standard_library_and_itself() -> None:
    allowed = set(sys.stdlib_module_names) | {"streaming", "__future__"}
    for path in ROOT.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"
                if name.startswith("streaming."):  # itself, and streaming's exception root
                    assert name.startswith(("streaming.codec", "streaming.errors")), (
                        f"{path.name} imports {name}"
                    )


def test_one_module_per_concern() -> None:
    modules = {p.stem for p in ROOT.glob("*.py")}
    assert {
        "reader",
        "keys",
        "offsets",
        "group_metadata",
        "consumer_protocol",
        "kip848",
        "share",
        "streams",
        "model",
        "errors",
        "decode",
    } <= modules


def test_every_value_decoder_name_carries_its_version() -> None:
    for record_type, spec in streaming.codec.RECORD_TYPES.items():
        for version, decoder in enumerate(spec.values):
            assert decoder.__name__.endswith(f"_value_v{version}"), (record_type, decoder)
