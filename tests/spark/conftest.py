"""The recorded scenario backlog the end-to-end tests read (the ``spark`` fixture is in
``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.spark.backlog import Backlog, record

if TYPE_CHECKING:
    from streaming.kafka_local import BrokerInfo


@pytest.fixture(scope="session")
def backlog(
    kafka_broker: BrokerInfo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backlog]:
    """The scenarios of :mod:`tests.spark.backlog`, played once for the end-to-end tiers."""
    played = record(kafka_broker.bootstrap_servers, tmp_path_factory.mktemp("backlog-logs"))
    try:
        yield played
    finally:
        if played.steady is not None:
            played.steady.close()
