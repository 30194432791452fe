"""Unit tests of ``assign_core.partition_cache``: the shared ``TopicPartition`` objects and
how an assignor's pause of the cyclic collector ends (``promote_young``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from assign_core import partition_cache
from assign_core.assignors import get_assignor
from assign_core.model import GroupSpec, Member, TopicPartition
from assign_core.scenario import default_topic_id

pytestmark = pytest.mark.unit


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        gc.enable() if was else gc.disable()


def _big_group(topic: str, partitions: int) -> GroupSpec:
    members = tuple(Member(f"m{i}", (topic,)) for i in range(4))
    return GroupSpec(
        topics={topic: partitions}, members=members, topic_ids={topic: default_topic_id(topic)}
    )


def test_topics_share_the_partition_numbers() -> None:
    a = partition_cache.topic_partitions("share-a", 3000)
    b = partition_cache.topic_partitions("share-b", 2000)
    assert a[1999] == TopicPartition("share-a", 1999)
    assert b[1999] == TopicPartition("share-b", 1999)
    assert a[1999].partition is b[1999].partition  # one int object, not one per topic
    # a topic that grows keeps its objects and gets the same numbers
    longer = partition_cache.topic_partitions("share-b", 2500)
    assert longer[:2000] == b[:2000] and all(x is y for x, y in zip(longer, b, strict=False))
    assert longer[2400].partition is a[2400].partition


@pytest.mark.parametrize("strategy", ["sticky", "uniform", "range"])
def test_a_large_result_leaves_the_young_generation_empty(
    strategy: str, collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From PROMOTE_AT young objects on, the paused collector hands them to the oldest
    generation instead of scanning them at the first collection after the call."""
    monkeypatch.setattr(partition_cache, "PROMOTE_AT", 5_000)
    gc.collect()
    spec = _big_group(f"promote-{strategy}", 20_000)
    result = get_assignor(strategy).assign(spec)
    assert gc.isenabled()
    assert gc.get_count()[0] < 5_000
    lists = {id(lst) for lst in result.assignment.values()}
    old = {id(o) for o in gc.get_objects(generation=2) if id(o) in lists}
    assert old == lists  # the result's lists are in the oldest generation, unscanned
    assert sum(map(len, result.assignment.values())) == 20_000


@pytest.mark.parametrize("strategy", ["cooperative-sticky", "server-range"])
def test_a_large_result_of_cached_partitions_is_promoted_too(
    strategy: str, collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm run makes few objects (the TopicPartitions are cached) but lists holding as many
    references as the result has partitions: scanning those is what the promotion saves."""
    monkeypatch.setattr(partition_cache, "PROMOTE_AT", 5_000)
    spec = _big_group(f"promote-warm-{strategy}", 20_000)
    get_assignor(strategy).assign(spec)
    gc.collect()
    result = get_assignor(strategy).assign(spec)
    assert gc.get_count()[0] < 5_000
    lists = {id(lst) for lst in result.assignment.values()}
    assert {id(o) for o in gc.get_objects(generation=2) if id(o) in lists} == lists


def test_a_small_result_is_left_to_the_young_collections(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    gc.collect()
    spec = _big_group("promote-small", 200)
    result = get_assignor("sticky").assign(spec)
    young = {id(o) for o in gc.get_objects(generation=0)}
    assert any(id(lst) in young for lst in result.assignment.values())


def test_objects_the_process_froze_stay_frozen(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that froze objects of its own (gc.freeze) keeps them frozen: nothing is
    promoted then (unfreezing would release them)."""
    monkeypatch.setattr(partition_cache, "PROMOTE_AT", 5_000)
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        get_assignor("sticky").assign(_big_group("promote-frozen", 20_000))
        # an unfreeze would have emptied the permanent generation, a freeze grown it by the
        # run's objects; frozen objects may still be freed by reference counting meanwhile
        # (other threads of the test process), so the count can only have dropped a little
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_the_collector_stays_disabled_if_it_was() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        get_assignor("uniform").assign(_big_group("promote-disabled", 20_000))
        assert not gc.isenabled()
    finally:
        gc.enable() if was else gc.disable()
