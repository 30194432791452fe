"""The footprint bench's modelled cluster (one rebalance per group per hour, a 10 % storm),
the request bench's churn schedule and its reading of the broker's request log."""

from __future__ import annotations

import datetime
import itertools

import pytest

from bench.footprint import (
    POLL_S,
    SETTLED_GAP_S,
    Model,
    Visit,
    bucket_counts,
    churn_schedule,
    conditions,
    parse_request,
    storm_share,
)

pytestmark = pytest.mark.unit


def _states(model: Model, polls: range, storm: int | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for poll in polls:
        a = model.answers(poll, end_offsets=False, storm_poll=storm)
        for g in a.groups:
            out.setdefault(g["group_id"], []).append(g["group_state"])
    return out


def test_every_group_rebalances_once_an_hour_and_a_tenth_in_the_storm() -> None:
    model = Model(groups=40, partitions=3, shared_topics=True)
    hour = range(3600 // POLL_S)

    calm = _states(model, hour, storm=None)
    assert all(s.count("PreparingRebalance") == 1 for s in calm.values())

    storm = _states(model, range(100, 101), storm=100)
    assert sum(s == ["PreparingRebalance"] for s in storm.values()) >= 4  # 10 % of 40
    assert model.topics() == ["topic-00000", "topic-00001"]  # 20 groups a topic


def test_member_ids_change_with_each_rebalance_and_end_offsets_move() -> None:
    model = Model(groups=1, partitions=2, shared_topics=False)
    ids = {
        model.answers(p, end_offsets=True, storm_poll=None).descriptions["group-00000"]["members"][
            0
        ]["member_id"]
        for p in range(2 * 3600 // POLL_S)
    }
    a, b = (model.answers(p, end_offsets=True, storm_poll=None) for p in (0, 1))

    assert len(ids) == 2  # its rebalances at polls 0 and 720: a new member id at the second
    assert all(b.end_offsets[tp] > a.end_offsets[tp] for tp in a.end_offsets)


# -- the request bench's churn: its schedule and the broker's request log ---------------------

_LINE = (
    '[2026-11-29 11:12:37,204] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
    '{"requestApiKey":16,"requestApiVersion":5,"correlationId":2,'
    '"clientId":"footprint-collector-0","requestApiKeyName":"LIST_GROUPS"},'
    '"request":{"statesFilter":[],"typesFilter":[]},"response":{"throttleTimeMs":0,'
    '"errorCode":0,"groups":[]},"totalTimeMs":6.307} (kafka.request.logger)'
)


def _overlaps(visits: list[Visit]) -> list[tuple[Visit, Visit]]:
    by_group: dict[int, list[Visit]] = {}
    for v in visits:
        by_group.setdefault(v.group, []).append(v)
    out = []
    for vs in by_group.values():
        vs.sort(key=lambda v: v.join_s)
        out += [(a, b) for a, b in itertools.pairwise(vs) if b.join_s < a.leave_s + SETTLED_GAP_S]
    return out


def test_churn_is_one_rebalance_per_group_an_hour_each_to_a_settled_group() -> None:
    visits = churn_schedule(1000, 360.0, dwell_s=12.0, seed=7)

    assert len(visits) == 100  # 1,000 groups x 360 s / 3,600 s
    assert all(v.leave_s - v.join_s == pytest.approx(12.0) and not v.storm for v in visits)
    gaps = [b.join_s - a.join_s for a, b in itertools.pairwise(visits)]
    assert min(gaps) == pytest.approx(3.6) and max(gaps) == pytest.approx(3.6)
    assert 0 <= visits[0].join_s < 3.6 and visits[-1].join_s < 360
    assert len({v.group for v in visits}) > 90  # random groups, not one after another
    assert churn_schedule(10, 3600.0, per_hour=6.0, seed=1)  # 60 visits among 10 groups
    assert _overlaps(churn_schedule(10, 3600.0, per_hour=6.0, seed=1)) == []


def test_churn_schedule_is_the_same_for_the_same_seed_only() -> None:
    a = churn_schedule(500, 300.0, seed=3)

    assert a == churn_schedule(500, 300.0, seed=3)
    assert a != churn_schedule(500, 300.0, seed=4)


def test_storm_is_a_tenth_of_the_groups_at_once_beside_the_same_churn() -> None:
    calm = churn_schedule(1000, 120.0, seed=0)
    stormy = churn_schedule(1000, 120.0, storm_at_s=50.0, seed=0)
    storm = [v for v in stormy if v.storm]

    assert len(storm) == 100 and len({v.group for v in storm}) == 100
    assert {v.join_s for v in storm} == {50.0}
    assert [v for v in stormy if not v.storm] == calm
    assert _overlaps(stormy) == []  # the storm's groups are settled ones
    assert len([v for v in churn_schedule(5, 60.0, storm_at_s=1.0) if v.storm]) == 1
    only = churn_schedule(200, 60.0, per_hour=0.0, storm_at_s=0.0)
    assert len(only) == 20 and all(v.storm for v in only)


@pytest.mark.parametrize(
    ("groups", "span_s", "kwargs"),
    [
        (0, 60.0, {}),
        (10, 0.0, {}),
        (10, 60.0, {"per_hour": -1.0}),
        (10, 60.0, {"dwell_s": 0.0}),
        (10, 60.0, {"storm_at_s": 60.0}),
        (2, 3600.0, {"per_hour": 3600.0}),  # a visit a second among 2 groups: none settled
    ],
)
def test_churn_schedule_refuses_what_it_cannot_do(
    groups: int, span_s: float, kwargs: dict[str, float]
) -> None:
    with pytest.raises(ValueError, match=r"churn needs|outside the span|settled"):
        churn_schedule(groups, span_s, **kwargs)  # type: ignore[arg-type]


def test_conditions_share_the_churn_and_centre_the_storm_in_the_window() -> None:
    settled, churn, storm = conditions(
        1000, 15.0, 60.0, churn=True, storm=True, per_hour=1.0, dwell_s=12.0, seed=0
    )

    assert (settled.name, settled.visits) == ("settled", ())
    assert churn.visits == tuple(v for v in storm.visits if not v.storm)
    assert storm.storm_at_s == 15.0 + (60.0 - 12.0 - POLL_S) / 2
    assert [c.name for c in conditions(10, 5, 40, churn=False, storm=False, per_hour=1,
                                       dwell_s=12, seed=0)] == ["settled"]  # fmt: skip


def test_a_request_log_line_gives_its_time_client_and_api() -> None:
    ts, client, api = parse_request(_LINE) or (0.0, "", "")

    assert (client, api) == ("footprint-collector-0", "LIST_GROUPS")
    assert ts == datetime.datetime(2026, 11, 29, 11, 12, 37, 204000).timestamp()
    assert parse_request(_LINE.replace('"footprint-collector-0"', "null"))[1:] == (  # type: ignore[index]
        "",
        "LIST_GROUPS",
    )
    assert parse_request("[2026-11-29 11:12:37,204] INFO [KafkaServer id=1] started") is None


def test_requests_fall_in_buckets_from_the_window_start() -> None:
    times = [100.0, 104.9, 105.0, 112.0, 99.9, 113.0]

    assert bucket_counts(times, 100.0, 113.0, 5.0) == [2, 1]  # not the 3 s left at the end
    assert bucket_counts(times, 100.0, 115.0, 5.0) == [2, 1, 2]
    with pytest.raises(ValueError, match="no whole bucket"):
        bucket_counts(times, 100.0, 104.0, 5.0)


def test_the_storm_s_share_is_its_buckets_through_a_poll_after_its_members_left() -> None:
    buckets = [1, 1, 1, 5, 9, 4, 2, 1, 1]

    # from 15 s (bucket 3) to 15 + 12 + 5 = 32 s (bucket 6)
    assert storm_share(buckets, 15.0, 12.0, 5.0) == (20, 4, 1.0)
    with pytest.raises(ValueError, match="outside"):
        storm_share(buckets, 60.0, 12.0, 5.0)
