from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.oracle.javaoracle import JavaOracle


@pytest.fixture(scope="session")
def oracle() -> Iterator[JavaOracle]:
    with JavaOracle() as o:
        yield o
