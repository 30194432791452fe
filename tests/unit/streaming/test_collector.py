"""``streaming.collector``: admin answers -> events, the event schema, configuration, the
gathering and retry logic against fake clients (no broker here; see
``tests/integration/test_collector.py`` for the real one)."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import kafka.errors as kafka_errors
import msgspec
import pytest
from kafka import OffsetAndMetadata, TopicPartition

from streaming import collector
from streaming.collector import (
    KAFKA_OPTIONS_ENV,
    AdminAnswers,
    Collector,
    CollectorConfig,
    CollectorConfigError,
    Issue,
    MembershipEvent,
    SnapshotError,
    build_events,
    cli_collect,
    gather_answers,
    group_topics,
    kafka_options_from_env,
    load_schema,
    parse_kafka_option,
)
from streaming.collector.topic import TOPIC_CONFIGS, config_mismatches

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[3] / "docs" / "events.md"
UUID_T1 = "7da97f07-23ef-4926-a769-bb72f3f99c5f"

# --------------------------------------------------------------------------- admin answers
# Shapes as kafka-python 3.0.12 returned them from a Kafka 4.4 broker (captured live).

CLUSTER: dict[str, Any] = {
    "cluster_id": "cI-bUO6oTYqMKKMlo1H_xg",
    "controller_id": 1,
    "brokers": [
        {"broker_id": 2, "host": "b2", "port": 9092, "rack": "r2", "is_fenced": False},
        {"broker_id": 1, "host": "b1", "port": 9092, "rack": "r1", "is_fenced": False},
        {"broker_id": 3, "host": "b3", "port": 9092, "rack": None, "is_fenced": False},
    ],
    "authorized_operations": ["DESCRIBE"],
}


def listed(group_id: str, group_type: str | None = "classic", state: str = "Stable") -> Any:
    entry = {"group_id": group_id, "protocol_type": "consumer", "group_state": state}
    if group_type is not None:
        entry["group_type"] = group_type
    return entry


# kafka-python consumer: subscription v0 (topics, user_data only)
PY_MEMBER: dict[str, Any] = {
    "member_id": "static-1-6c392f84-ff0c-4629-ac97-2aecbd50fef4",
    "group_instance_id": "static-1",
    "client_id": "py-c1",
    "client_host": "/127.0.0.1",
    "member_metadata": {"topics": ["t1", "t2"], "user_data": ""},
    "member_assignment": {
        "assigned_partitions": [
            {"topic": "t2", "partitions": [1]},
            {"topic": "t1", "partitions": [2, 0]},
        ],
        "user_data": "",
    },
}
# Java consumer: subscription v3 (owned partitions, generation, rack)
JAVA_MEMBER: dict[str, Any] = {
    "member_id": "jc-f545ee56-c709-45d0-831a-da2581bcbcd9",
    "group_instance_id": None,
    "client_id": "jc",
    "client_host": "/10.0.0.7",
    "member_metadata": {
        "topics": ["t1", "t2"],
        "user_data": None,
        "owned_partitions": [{"topic": "t1", "partitions": [1]}],
        "generation_id": 4,
        "rack_id": "r2",
    },
    "member_assignment": {
        "assigned_partitions": [
            {"topic": "t1", "partitions": [1]},
            {"topic": "t2", "partitions": [0]},
        ],
        "user_data": None,
    },
}
CLASSIC: dict[str, Any] = {
    "group_id": "g-classic",
    "group_state": "Stable",
    "protocol_type": "consumer",
    "protocol_data": "range",
    "members": [PY_MEMBER, JAVA_MEMBER],
    "authorized_operations": None,
    "error": None,
}
NOT_CLASSIC: dict[str, Any] = {
    "group_id": "g-old-broker",
    "group_state": "Dead",
    "protocol_type": "",
    "protocol_data": "",
    "members": [],
    "authorized_operations": None,
    "error": "[Error 69] GroupIdNotFoundError: Group g-old-broker is not a classic group.",
}


def topic_meta(name: str, partitions: int, *, topic_id: str = UUID_T1) -> dict[str, Any]:
    return {
        "error_code": 0,
        "name": name,
        "topic_id": topic_id,
        "is_internal": False,
        "partitions": [
            {
                "error_code": 0,
                "partition_index": p,
                "leader_id": 1 + p % 3,
                "leader_epoch": 0,
                "replica_nodes": [1 + p % 3, 1 + (p + 1) % 3],
                "isr_nodes": [1 + p % 3],
                "offline_replicas": [],
            }
            for p in reversed(range(partitions))
        ],
    }


def answers(**overrides: Any) -> AdminAnswers:
    base: dict[str, Any] = {
        "snapshot_ts_ms": 1_795_238_759_399,
        "cluster": CLUSTER,
        "groups": [
            listed("g-kip848", "consumer", "Reconciling"),
            listed("g-classic"),
        ],
        "descriptions": {"g-classic": CLASSIC},
        "committed": {
            "g-classic": {
                TopicPartition("t1", 0): OffsetAndMetadata(5, "", 0),
                TopicPartition("t1", 2): OffsetAndMetadata(-1, None, -1),
            },
            "g-kip848": {TopicPartition("t3", 0): OffsetAndMetadata(7, "m", 3)},
        },
        "topics": [topic_meta("t1", 3), topic_meta("t2", 2), topic_meta("t3", 1)],
        "end_offsets": {("t1", 0): 9, ("t1", 1): 4, ("t1", 2): 1, ("t2", 0): 0, ("t3", 0): 10},
        "end_offsets_ts_ms": 1_795_238_759_426,
    }
    base.update(overrides)
    return AdminAnswers(**base)


def events_of(a: AdminAnswers) -> dict[str, dict[str, Any]]:
    """Group events by group id, plus the topics event under ``"<topics>"``."""
    out: dict[str, dict[str, Any]] = {}
    for event in build_events(a, cluster="test", snapshot_id="snap-1"):
        if event.value["event_type"] == "group":
            out[event.value["group_id"]] = event.value
        else:
            out["<topics>"] = event.value
    return out


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = load_schema(1)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def assert_valid(validator: jsonschema.Draft202012Validator, value: Mapping[str, Any]) -> None:
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


# --------------------------------------------------------------------------- build_events


def test_one_group_event_per_group_sorted_then_one_topics_event() -> None:
    events = build_events(answers(), cluster="test", snapshot_id="snap-1")

    assert [(e.key, e.value["event_type"]) for e in events] == [
        ("g-classic", "group"),
        ("g-kip848", "group"),
        ("test", "topics"),
    ]
    for e in events:
        assert e.value["schema_version"] == 1
        assert (e.value["cluster"], e.value["snapshot_id"]) == ("test", "snap-1")
        assert e.value["snapshot_ts_ms"] == 1_795_238_759_399
        assert e.value["kafka_cluster_id"] == "cI-bUO6oTYqMKKMlo1H_xg"
        assert list(e.value)[:2] == ["schema_version", "event_type"]


def test_classic_group_members_and_assignments() -> None:
    g = events_of(answers())["g-classic"]

    assert (g["group_type"], g["protocol_type"], g["state"]) == ("classic", "consumer", "Stable")
    assert g["protocol_name"] == "range"
    assert g["membership_source"] == "describe_groups"
    assert g["member_count"] == 2
    py, java = g["members"]  # the broker's order is kept
    assert py == {
        "member_id": "static-1-6c392f84-ff0c-4629-ac97-2aecbd50fef4",
        "group_instance_id": "static-1",
        "client_id": "py-c1",
        "client_host": "/127.0.0.1",
        "rack_id": None,
        "subscribed_topics": ["t1", "t2"],
        "owned_partitions": None,  # subscription v0 has no such field
        "subscription_generation_id": None,
        "assignment": [{"topic": "t1", "partitions": [0, 2]}, {"topic": "t2", "partitions": [1]}],
        "assigned_partition_count": 3,
    }
    assert java["group_instance_id"] is None
    assert java["rack_id"] == "r2"
    assert java["owned_partitions"] == [{"topic": "t1", "partitions": [1]}]
    assert java["subscription_generation_id"] == 4
    assert java["assigned_partition_count"] == 2
    assert g["topics"] == ["t1", "t2"]
    assert g["errors"] == []


def test_committed_offsets_get_end_offset_and_lag() -> None:
    g = events_of(answers())["g-classic"]

    assert g["committed_offsets"] == [
        {
            "topic": "t1",
            "partition": 0,
            "offset": 5,
            "leader_epoch": 0,
            "metadata": "",
            "end_offset": 9,
            "lag": 4,
        },
        # no committed position (-1) and no leader epoch (-1): lag and epoch unknown
        {
            "topic": "t1",
            "partition": 2,
            "offset": -1,
            "leader_epoch": None,
            "metadata": None,
            "end_offset": 1,
            "lag": None,
        },
    ]


def test_kip848_group_gets_list_groups_state_offsets_and_the_consumer_offsets_flag() -> None:
    g = events_of(answers())["g-kip848"]

    assert g["group_type"] == "consumer"
    assert g["state"] == "Reconciling"  # from ListGroups
    assert g["membership_source"] == "consumer_offsets"
    assert (g["members"], g["member_count"], g["protocol_name"]) == (None, None, None)
    assert g["topics"] == ["t3"]  # known only through its committed offsets
    assert g["committed_offsets"][0]["lag"] == 3
    assert g["errors"] == []
    assert g["session_timeout_ms"] is None  # not described in these answers


def test_kip848_group_carries_its_session_timeout() -> None:
    """The session timeout of a KIP-848 group is a group config, in no record: the group
    event carries what DescribeConfigs said; classic groups carry null (their members'
    session timeouts are in their GroupMetadata records)."""
    evs = events_of(answers(session_timeouts={"g-kip848": 6000}))
    assert evs["g-kip848"]["session_timeout_ms"] == 6000
    assert evs["g-classic"]["session_timeout_ms"] is None


def test_broker_without_group_type_kip848_group_recognised_by_describe_error() -> None:
    a = answers(
        groups=[listed("g-old-broker", group_type=None, state="Stable")],
        descriptions={"g-old-broker": NOT_CLASSIC},
        committed={},
    )
    g = events_of(a)["g-old-broker"]

    assert g["group_type"] is None
    assert g["membership_source"] == "consumer_offsets"
    assert g["state"] == "Stable"  # ListGroups, not the error's "Dead"
    assert g["members"] is None
    assert g["committed_offsets"] is None  # not fetched
    [error] = g["errors"]
    assert error["stage"] == "describe_groups"
    assert "not a classic group" in error["message"]
    assert error["group_id"] == "g-old-broker"


def test_failed_describe_keeps_the_source_and_reports_the_error() -> None:
    issue = Issue("describe_groups", "GroupAuthorizationFailedError: denied", group_id="g-classic")
    a = answers(descriptions={}, issues=[issue])
    g = events_of(a)["g-classic"]

    assert g["membership_source"] == "describe_groups"
    assert g["members"] is None and g["member_count"] is None
    assert g["state"] == "Stable"  # from ListGroups
    assert g["errors"] == [
        {
            "stage": "describe_groups",
            "message": "GroupAuthorizationFailedError: denied",
            "group_id": "g-classic",
            "topic": None,
        }
    ]
    assert events_of(a)["<topics>"]["errors"] == []


def test_non_consumer_protocol_members_are_opaque() -> None:
    connect = {
        **CLASSIC,
        "group_id": "connect-cluster",
        "protocol_type": "connect",
        "protocol_data": "sessioned",
        "members": [{**JAVA_MEMBER, "member_metadata": "\\x00\\x03garbage"}],
    }
    a = answers(
        groups=[{**listed("connect-cluster"), "protocol_type": "connect"}],
        descriptions={"connect-cluster": connect},
        committed={},
    )
    g = events_of(a)["connect-cluster"]

    [m] = g["members"]
    assert m["client_id"] == "jc"
    assert m["subscribed_topics"] is m["assignment"] is m["owned_partitions"] is None
    assert g["protocol_name"] == "sessioned"
    assert g["topics"] == []
    assert g["errors"] == []


def test_undecodable_consumer_subscription_is_an_error_not_a_crash() -> None:
    broken = {**CLASSIC, "members": [{**PY_MEMBER, "member_metadata": "\\xff\\xff"}]}
    g = events_of(answers(descriptions={"g-classic": broken}))["g-classic"]

    [m] = g["members"]
    assert m["subscribed_topics"] is None
    assert m["assignment"] is not None
    assert [e["stage"] for e in g["errors"]] == ["decode_member"]


def test_group_between_generations_has_no_protocol_and_no_assignment() -> None:
    rebalancing = {
        **CLASSIC,
        "group_state": "PreparingRebalance",
        "protocol_data": "",
        "members": [{**PY_MEMBER, "member_assignment": ""}],
    }
    g = events_of(answers(descriptions={"g-classic": rebalancing}))["g-classic"]

    assert g["state"] == "PreparingRebalance"
    assert g["protocol_name"] is None
    [m] = g["members"]
    assert m["assignment"] is None and m["assigned_partition_count"] is None
    assert g["errors"] == []


def test_empty_group_has_an_empty_member_list() -> None:
    empty = {**CLASSIC, "group_state": "Empty", "protocol_data": "", "members": []}
    g = events_of(answers(descriptions={"g-classic": empty}))["g-classic"]

    assert (g["members"], g["member_count"], g["state"]) == ([], 0, "Empty")
    assert g["topics"] == ["t1"]  # from its committed offsets


def test_topics_event_partitions_racks_end_offsets() -> None:
    t = events_of(answers())["<topics>"]

    assert t["group_ids"] == ["g-classic", "g-kip848"]
    assert t["controller_id"] == 1
    assert [b["broker_id"] for b in t["brokers"]] == [1, 2, 3]
    assert t["end_offsets_ts_ms"] == 1_795_238_759_426
    assert [x["topic"] for x in t["topics"]] == ["t1", "t2", "t3"]
    t1 = t["topics"][0]
    assert t1["topic_id"] == "fal_ByPvSSanabty8_mcXw"  # Kafka's base64 text form
    assert t1["partition_count"] == 3 and t1["error"] is None
    assert [p["partition"] for p in t1["partitions"]] == [0, 1, 2]
    p2 = t1["partitions"][2]
    assert p2 == {
        "partition": 2,
        "leader_id": 3,
        "replicas": [3, 1],
        "isr": [3],
        "offline_replicas": [],
        "replica_racks": [None, "r1"],  # broker 3 has no rack
        "end_offset": 1,
    }
    t2 = t["topics"][1]
    assert [p["end_offset"] for p in t2["partitions"]] == [0, None]  # p1 not answered


def test_topics_event_reports_undescribed_and_unknown_topics() -> None:
    gone = {"error_code": 3, "name": "t1", "topic_id": "0" * 32, "is_internal": False}
    a = answers(
        topics=[gone, topic_meta("t3", 1)],
        issues=[Issue("list_partition_offsets", "NotLeaderForPartitionError", topic="t3")],
    )
    t = events_of(a)["<topics>"]

    by_name = {x["topic"]: x for x in t["topics"]}
    assert by_name["t1"]["error"] == "UnknownTopicOrPartitionError"
    assert by_name["t1"]["topic_id"] is None  # the zero uuid
    assert by_name["t1"]["partition_count"] is None and by_name["t1"]["partitions"] == []
    assert by_name["t2"]["error"] == "not described in this snapshot"
    assert by_name["t3"]["partition_count"] == 1
    assert [(e["stage"], e["topic"]) for e in t["errors"]] == [("list_partition_offsets", "t3")]


def test_empty_cluster_gives_one_topics_event() -> None:
    a = AdminAnswers(snapshot_ts_ms=1, cluster=None, groups=[])
    [event] = build_events(a, cluster="c", snapshot_id="s")

    assert event.key == "c"
    assert event.value["group_ids"] == [] and event.value["topics"] == []
    assert event.value["kafka_cluster_id"] is None and event.value["brokers"] == []
    assert event.value["end_offsets_ts_ms"] is None


def test_group_topics_collects_subscriptions_assignments_owned_and_committed() -> None:
    java_only = {**CLASSIC, "members": [JAVA_MEMBER]}
    committed = {("t9", 0): (1, "", -1)}

    assert group_topics(java_only, committed) == {"t1", "t2", "t9"}
    assert group_topics(NOT_CLASSIC, committed) == {"t9"}
    assert group_topics(None, None) == set()


def test_encode_is_compact_utf8_json() -> None:
    key, value = MembershipEvent("grüppe", {"a": [1, 2], "b": "ü"}).encode()

    assert key == "grüppe".encode()
    assert value == '{"a":[1,2],"b":"ü"}'.encode()


# --------------------------------------------------------------------------- the schema

SCENARIOS = {
    "full": answers(),
    "old broker": answers(
        groups=[listed("g-old-broker", group_type=None)],
        descriptions={"g-old-broker": NOT_CLASSIC},
    ),
    "failures": answers(
        descriptions={},
        committed={},
        topics=[],
        end_offsets={},
        end_offsets_ts_ms=None,
        cluster=None,
        issues=[
            Issue("describe_cluster", "ClusterAuthorizationFailedError"),
            Issue("describe_groups", "CoordinatorNotAvailableError", group_id="g-classic"),
            Issue("list_group_offsets", "CoordinatorNotAvailableError", group_id="g-kip848"),
            Issue("describe_topics", "TopicAuthorizationFailedError"),
        ],
    ),
    "empty": AdminAnswers(snapshot_ts_ms=0, cluster=None, groups=[]),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_event_validates_against_the_schema(
    name: str, validator: jsonschema.Draft202012Validator
) -> None:
    for event in build_events(SCENARIOS[name], cluster="test", snapshot_id="snap"):
        assert_valid(validator, json.loads(event.encode()[1]))


def _declared(schema: Mapping[str, Any], definition: str) -> tuple[set[str], set[str]]:
    defs = schema["$defs"]
    body = defs[definition]
    props = set(body.get("properties", {}))
    required = set(body.get("required", ()))
    for ref in body.get("allOf", ()):
        inner = defs[ref["$ref"].rsplit("/", 1)[1]]
        props |= set(inner["properties"])
        required |= set(inner["required"])
    return props, required


@pytest.mark.parametrize(
    ("definition", "pick"),
    [
        ("group_event", lambda evs: evs["g-classic"]),
        ("topics_event", lambda evs: evs["<topics>"]),
        ("member", lambda evs: evs["g-classic"]["members"][1]),
        ("committed_offset", lambda evs: evs["g-classic"]["committed_offsets"][0]),
        ("broker", lambda evs: evs["<topics>"]["brokers"][0]),
        ("topic", lambda evs: evs["<topics>"]["topics"][0]),
        ("partition", lambda evs: evs["<topics>"]["topics"][0]["partitions"][0]),
    ],
)
def test_events_carry_exactly_the_declared_properties_all_required(
    definition: str, pick: Any
) -> None:
    """The schema is open for readers (additive changes), so closedness is checked here:
    the collector emits every declared property, and nothing undeclared."""
    props, required = _declared(load_schema(1), definition)
    emitted = pick(events_of(answers()))

    assert props == required
    assert set(emitted) == props


def test_error_objects_carry_the_declared_properties() -> None:
    props, required = _declared(load_schema(1), "error")
    [error] = events_of(SCENARIOS["failures"])["g-classic"]["errors"]

    assert set(error) == props
    assert required == props  # the writer's contract: every property, null when unknown


@pytest.mark.parametrize("version", [1, 2])
def test_every_schema_property_is_documented(version: int) -> None:
    docs = DOCS.read_text(encoding="utf-8")
    schema = load_schema(version)
    names = {p for body in schema["$defs"].values() for p in body.get("properties", {})}

    undocumented = sorted(n for n in names if f"`{n}`" not in docs)
    assert undocumented == []


def test_docs_examples_validate() -> None:
    blocks = re.findall(r"```json\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    examples = [json.loads(b) for b in blocks]
    validators = {v: jsonschema.Draft202012Validator(load_schema(v)) for v in (1, 2)}

    assert {(e["schema_version"], e["event_type"]) for e in examples} == {
        (1, "group"),
        (1, "topics"),
        (2, "group"),
        (2, "poll"),
        (2, "heartbeat"),
        (2, "end_offsets"),
    }
    for example in examples:
        assert_valid(validators[example["schema_version"]], example)


def test_schema_rejects_what_it_should(validator: jsonschema.Draft202012Validator) -> None:
    good = json.loads(build_events(answers(), cluster="c", snapshot_id="s")[0].encode()[1])

    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "schema_version": 2})
    assert not validator.is_valid({**good, "membership_source": "guess"})
    assert not validator.is_valid({k: v for k, v in good.items() if k != "members"})
    assert not validator.is_valid({**good, "snapshot_ts_ms": 1.5})
    assert validator.is_valid({**good, "a_future_additive_field": 1})


# --------------------------------------------------------------------------- configuration


def test_config_defaults() -> None:
    c = CollectorConfig()

    assert c.bootstrap_servers == ("127.0.0.1:19092",)
    assert (c.interval_s, c.topic, c.cluster) == (5.0, "rebalance-monitor.membership", "local")
    assert c.group_pattern.fullmatch("anything")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.interval_s = 1  # type: ignore[misc]


def test_config_splits_bootstrap_servers() -> None:
    c = CollectorConfig(bootstrap_servers="k1:9092, k2:9093")

    assert c.bootstrap_servers == ("k1:9092", "k2:9093")
    assert c.admin_configs()["bootstrap_servers"] == ["k1:9092", "k2:9093"]


# Each row: keyword arguments, and the setting the error message must name.
INVALID_CONFIGS = [
    ({"bootstrap_servers": ""}, "bootstrap_servers"),
    ({"bootstrap_servers": "k1"}, "bootstrap_servers"),  # no port
    ({"bootstrap_servers": "k1:99999"}, "bootstrap_servers"),  # port out of range
    ({"bootstrap_servers": ()}, "bootstrap_servers"),
    ({"interval_s": 0}, "interval_s"),
    ({"interval_s": -1.0}, "interval_s"),
    ({"topic": ""}, "topic"),
    ({"topic": ".."}, "topic"),
    ({"topic": "has space"}, "topic"),
    ({"topic": "x" * 250}, "topic"),
    ({"cluster": " "}, "cluster"),
    ({"group_filter": "("}, "group_filter"),
    ({"topic_partitions": 0}, "topic_partitions"),
    ({"topic_replication_factor": 0}, "topic_replication_factor"),
    ({"request_timeout_ms": 0}, "request_timeout_ms"),
    ({"chunk_bytes": 1000}, "chunk_bytes"),
    ({"chunk_bytes": 2**27}, "chunk_bytes"),
    ({"chunk_bytes": 4096.5}, "chunk_bytes"),
    ({"backoff_initial_s": 0}, "backoff_initial_s"),
    ({"backoff_initial_s": 10, "backoff_max_s": 1}, "backoff_initial_s"),
    ({"kafka_options": {"acks": "0"}}, "'acks' is not a passthrough option"),
    ({"kafka_options": {"bootstrap_servers": "x:1"}}, "not a passthrough option"),
    ({"kafka_options": {"security_protocol": "TLS"}}, "security_protocol must be one of"),
    ({"kafka_options": {"sasl_mechanism": "plain"}}, "sasl_mechanism must be one of"),
    ({"kafka_options": {"ssl_check_hostname": "false"}}, "ssl_check_hostname must be true"),
    ({"kafka_options": {"ssl_cafile": ""}}, "ssl_cafile must be a non-empty string"),
    ({"kafka_options": {"ssl_context": None}}, "ssl_context must not be None"),
]


@pytest.mark.parametrize(("kwargs", "names"), INVALID_CONFIGS)
def test_config_rejects(kwargs: dict[str, Any], names: str) -> None:
    with pytest.raises(CollectorConfigError, match=re.escape(names)):
        CollectorConfig(**kwargs)


def test_config_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        CollectorConfig(interval_s=0)


def test_kafka_options_pass_through_and_stay_out_of_repr() -> None:
    context = object()
    c = CollectorConfig(
        kafka_options={
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "monitor",
            "sasl_plain_password": "s3cret",
            "ssl_check_hostname": False,
            "ssl_ciphers": "ECDHE",
            "ssl_context": context,
        }
    )

    assert "s3cret" not in repr(c)
    assert c.redacted_options()["sasl_plain_password"] == "***"
    assert c.redacted_options()["ssl_context"] == "***"
    assert c.redacted_options()["sasl_plain_username"] == "monitor"
    admin = c.admin_configs()
    assert admin["sasl_plain_password"] == "s3cret"
    assert admin["ssl_check_hostname"] is False
    assert admin["ssl_context"] is context
    assert "ssl_ciphers" not in admin  # KafkaAdminClient rejects unknown configs
    producer = c.producer_configs()
    assert producer["ssl_ciphers"] == "ECDHE" and producer["acks"] == "all"
    with pytest.raises(TypeError):
        c.kafka_options["security_protocol"] = "PLAINTEXT"  # type: ignore[index]


def test_client_configs_are_accepted_by_kafka_python() -> None:
    from kafka import KafkaAdminClient, KafkaProducer

    c = CollectorConfig(
        kafka_options={"security_protocol": "SSL", "ssl_cafile": "/ca.pem", "ssl_ciphers": "X"}
    )

    assert set(c.admin_configs()) <= set(KafkaAdminClient.DEFAULT_CONFIG)
    assert set(c.producer_configs()) <= set(KafkaProducer.DEFAULT_CONFIG)
    assert set(KafkaProducer.DEFAULT_CONFIG) >= collector.KAFKA_OPTION_KEYS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("security_protocol=SASL_SSL", ("security_protocol", "SASL_SSL")),
        ("security.protocol=SSL", ("security_protocol", "SSL")),
        ("sasl-mechanism=PLAIN", ("sasl_mechanism", "PLAIN")),
        ("sasl_plain_password=a=b", ("sasl_plain_password", "a=b")),  # first '=' splits
        ("ssl_check_hostname=false", ("ssl_check_hostname", False)),
        ("ssl_check_hostname=Yes", ("ssl_check_hostname", True)),
    ],
)
def test_parse_kafka_option(text: str, expected: tuple[str, Any]) -> None:
    assert parse_kafka_option(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("security_protocol", "KEY=VALUE"),
        ("=x", "KEY=VALUE"),
        ("ssl_context=x", "Python object"),
        ("ssl_check_hostname=maybe", "true or false"),
        ("linger_ms=5", "not a passthrough option"),
    ],
)
def test_parse_kafka_option_rejects(text: str, message: str) -> None:
    with pytest.raises(CollectorConfigError, match=message):
        parse_kafka_option(text)


# --------------------------------------------------------------------------- gathering


class FakeAdmin:
    """Answers like KafkaAdminClient; ``fail`` maps a method name to an exception raised
    when the call includes the given key (or always, for key ``"*"``)."""

    def __init__(
        self,
        *,
        groups: Sequence[Mapping[str, Any]] = (),
        descriptions: Mapping[str, Any] | None = None,
        offsets: Mapping[str, Any] | None = None,
        topics: Mapping[str, Any] | None = None,
        fail: Mapping[str, tuple[str, BaseException]] | None = None,
    ) -> None:
        self.groups = list(groups)
        self.descriptions = dict(descriptions or {})
        self.offsets = dict(offsets or {})
        self.topics = dict(topics or {})
        self.fail = dict(fail or {})
        self.calls: list[tuple[str, Any]] = []
        self.created: list[Any] = []
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.closed = False

    def _maybe_fail(self, method: str, keys: Sequence[Any]) -> None:
        self.calls.append((method, list(keys)))
        if method in self.fail:
            key, exc = self.fail[method]
            if key == "*" or key in keys:
                raise exc

    def describe_cluster(self) -> Any:
        self._maybe_fail("describe_cluster", [])
        return CLUSTER

    def list_groups(self) -> Any:
        self._maybe_fail("list_groups", [])
        return self.groups

    def describe_groups(self, ids: list[str]) -> Any:
        self._maybe_fail("describe_groups", ids)
        return {g: self.descriptions[g] for g in ids}

    def list_group_offsets(self, ids: list[str]) -> Any:
        self._maybe_fail("list_group_offsets", ids)
        return {g: self.offsets.get(g, {}) for g in ids}

    def describe_configs(self, resources: list[Any], config_filter: str = "modified") -> Any:
        self._maybe_fail("describe_configs", [r.name for r in resources])
        topics = {
            r.name: {k: {"value": v} for k, v in self.topic_configs.get(r.name, {}).items()}
            for r in resources
            if r.name in self.topics
        }
        groups = {
            r.name: {"consumer.session.timeout.ms": {"value": "6000"}}
            for r in resources
            if r.name not in self.topics
        }
        return {"group": groups, "topic": topics}

    def list_topics(self) -> Any:
        self._maybe_fail("list_topics", [])
        return [*self.topics, "__consumer_offsets"]

    def describe_topics(self, names: list[str]) -> Any:
        self._maybe_fail("describe_topics", names)
        return [self.topics.get(n, {"error_code": 3, "name": n, "partitions": []}) for n in names]

    def list_partition_offsets(self, specs: Mapping[Any, Any]) -> Any:
        self._maybe_fail("list_partition_offsets", sorted({tp.topic for tp in specs}))
        return {tp: OffsetAndMetadata(100 + tp.partition, "", -1) for tp in specs}

    def create_topics(self, spec: Mapping[str, Any], raise_errors: bool = True) -> Any:
        self.created.append(dict(spec))
        for name in spec:
            self.topics[name] = topic_meta(name, 1)
        return {"topics": [{"name": n, "error_code": 0} for n in spec]}

    def wait_for_topics(self, names: list[str], timeout_ms: int = 0) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def fake_admin(**overrides: Any) -> FakeAdmin:
    base: dict[str, Any] = {
        "groups": [
            listed("app-1"),
            listed("app-2"),
            listed("app-848", "consumer"),
            listed("app-share", "share"),
            listed("other"),
        ],
        "descriptions": {
            "app-1": {**CLASSIC, "group_id": "app-1"},
            "app-2": {**CLASSIC, "group_id": "app-2", "members": []},
            "other": CLASSIC,
        },
        "offsets": {"app-848": {TopicPartition("t3", 0): OffsetAndMetadata(1, "", -1)}},
        "topics": {"t1": topic_meta("t1", 3), "t2": topic_meta("t2", 2), "t3": topic_meta("t3", 1)},
    }
    base.update(overrides)
    return FakeAdmin(**base)


def test_gather_filters_groups_and_asks_each_api_only_what_it_serves() -> None:
    admin = fake_admin()
    a = gather_answers(admin, CollectorConfig(group_filter="app-.*"), clock=lambda: 12.5)

    assert a.snapshot_ts_ms == 12_500 and a.end_offsets_ts_ms == 12_500
    assert [g["group_id"] for g in a.groups] == ["app-1", "app-2", "app-848", "app-share"]
    calls = dict(admin.calls)
    assert calls["describe_groups"] == ["app-1", "app-2"]  # classic only
    assert calls["list_group_offsets"] == ["app-1", "app-2", "app-848"]  # no share group
    assert calls["describe_configs"] == ["app-848"]  # the KIP-848 group's session timeout
    assert a.session_timeouts == {"app-848": 6000}
    assert calls["describe_topics"] == ["t1", "t2", "t3"]
    assert a.end_offsets[("t1", 2)] == 102
    assert a.issues == []


def test_gather_describes_every_topic_while_a_kip848_group_has_no_commits() -> None:
    """Its topics are unknown (no DescribeGroups, no offsets) and its records name them by
    id: every topic is described so that the tracker can name them (issue 17)."""
    admin = fake_admin(offsets={})
    a = gather_answers(admin, CollectorConfig(group_filter="app-848"))
    calls = dict(admin.calls)
    assert "list_topics" in calls
    assert calls["describe_topics"] == ["t1", "t2", "t3"]  # not the internal topic
    # once it has committed, only the topics it touches
    admin = fake_admin()
    gather_answers(admin, CollectorConfig(group_filter="app-848"))
    calls = dict(admin.calls)
    assert "list_topics" not in calls and calls["describe_topics"] == ["t3"]
    assert a.session_timeouts == {"app-848": 6000}


def test_gather_falls_back_to_one_group_at_a_time() -> None:
    denied = kafka_errors.GroupAuthorizationFailedError("app-2")
    admin = fake_admin(fail={"describe_groups": ("app-2", denied)})
    a = gather_answers(admin, CollectorConfig(group_filter="app-.*"))

    assert sorted(a.descriptions) == ["app-1"]
    [issue] = a.issues
    assert (issue.stage, issue.group_id) == ("describe_groups", "app-2")
    assert "GroupAuthorizationFailedError" in issue.message
    describe_calls = [keys for method, keys in admin.calls if method == "describe_groups"]
    assert describe_calls == [["app-1", "app-2"], ["app-1"], ["app-2"]]


def test_gather_records_topic_level_failures() -> None:
    admin = fake_admin(
        fail={"list_partition_offsets": ("t2", kafka_errors.NotLeaderForPartitionError("t2"))}
    )
    a = gather_answers(admin, CollectorConfig())

    assert ("t1", 0) in a.end_offsets and ("t2", 0) not in a.end_offsets
    assert [(i.stage, i.topic) for i in a.issues] == [("list_partition_offsets", "t2")]


def test_gather_carries_on_without_describe_cluster() -> None:
    denied = kafka_errors.ClusterAuthorizationFailedError("no DESCRIBE")
    a = gather_answers(fake_admin(fail={"describe_cluster": ("*", denied)}), CollectorConfig())

    assert a.cluster is None
    assert [i.stage for i in a.issues] == ["describe_cluster"]


@pytest.mark.parametrize(
    "method", ["list_groups", "describe_groups", "list_group_offsets", "describe_topics"]
)
def test_gather_lets_connection_errors_fail_the_snapshot(method: str) -> None:
    admin = fake_admin(fail={method: ("*", kafka_errors.KafkaConnectionError("refused"))})

    with pytest.raises(kafka_errors.KafkaConnectionError):
        gather_answers(admin, CollectorConfig())


# --------------------------------------------------------------------------- the loop


class FakeFuture:
    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    def get(self, timeout: float | None = None) -> None:
        if self.error:
            raise self.error


class FakeProducer:
    def __init__(self, error: BaseException | None = None) -> None:
        self.sent: list[tuple[str, bytes, bytes]] = []
        self.error = error
        self.closed = False

    def send(
        self, topic: str, *, key: bytes, value: bytes | None, partition: int | None = None
    ) -> FakeFuture:
        self.sent.append((topic, key, value))
        return FakeFuture(self.error)

    def partitions_for(self, topic: str) -> set[int]:
        return {0, 1, 2}

    def flush(self, timeout: float | None = None) -> None:
        pass

    def close(self) -> None:
        self.closed = True


FAST: dict[str, Any] = {"backoff_initial_s": 0.01, "backoff_max_s": 0.02, "interval_s": 0.01}


def test_snapshot_creates_the_topic_and_publishes_keyed_events(
    validator: jsonschema.Draft202012Validator,
) -> None:
    admin, producer = fake_admin(), FakeProducer()
    config = CollectorConfig(
        topic="mon", cluster="prod", topic_partitions=3, schema_version=1, **FAST
    )
    c = Collector(config, admin_factory=lambda _: admin, producer_factory=lambda _: producer)

    report = c.snapshot_once()

    assert admin.created == [
        {"mon": {"num_partitions": 3, "replication_factor": -1, "configs": dict(TOPIC_CONFIGS)}}
    ]
    assert report.groups == 5 and report.offsets_only_groups == 2
    assert report.events_published == 6 == len(producer.sent)
    assert {t for t, _, _ in producer.sent} == {"mon"}
    keys = [k.decode() for _, k, _ in producer.sent]
    assert keys == ["app-1", "app-2", "app-848", "app-share", "other", "prod"]
    values = [json.loads(v) for _, _, v in producer.sent]
    assert len({v["snapshot_id"] for v in values}) == 1
    for value in values:
        assert_valid(validator, value)

    c.snapshot_once()  # the topic is checked once per connection
    assert len(admin.created) == 1
    c.close()
    assert admin.closed and producer.closed


def test_topic_settings_as_created_have_no_mismatch_others_are_named() -> None:
    assert config_mismatches(dict(TOPIC_CONFIGS)) == []
    # compact+delete still compacts; "producer" keeps the producer's zstd batches
    also_fine = {
        **TOPIC_CONFIGS,
        "cleanup.policy": "compact,delete",
        "compression.type": "producer",
    }
    assert config_mismatches(also_fine) == []

    broker_defaults = {**TOPIC_CONFIGS, "cleanup.policy": "delete", "segment.ms": "604800000"}
    del broker_defaults["delete.retention.ms"]

    assert config_mismatches(broker_defaults) == [
        "cleanup.policy=delete (wanted compact)",
        "segment.ms=604800000 (wanted 3600000)",
        "delete.retention.ms=(unknown) (wanted 86400000)",
    ]


def test_an_existing_topic_with_other_settings_is_used_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin, producer = fake_admin(), FakeProducer()
    admin.topics["mon"] = topic_meta("mon", 1)
    admin.topic_configs["mon"] = {**TOPIC_CONFIGS, "cleanup.policy": "delete"}
    c = Collector(
        CollectorConfig(topic="mon", **FAST),
        admin_factory=lambda _: admin,
        producer_factory=lambda _: producer,
    )

    with caplog.at_level(logging.WARNING, logger="streaming.collector"):
        c.snapshot_once()
        c.close()
        c.snapshot_once()  # a new connection: the settings are not checked again

    assert admin.created == []
    warnings = [r.getMessage() for r in caplog.records if "other settings" in r.getMessage()]
    assert len(warnings) == 1
    assert "cleanup.policy=delete (wanted compact)" in warnings[0]
    assert "segment.ms" not in warnings[0]


def test_run_retries_with_backoff_until_the_cluster_answers() -> None:
    attempts: list[int] = []
    admin = fake_admin()

    def flaky(_: CollectorConfig) -> FakeAdmin:
        attempts.append(1)
        if len(attempts) < 3:
            raise kafka_errors.KafkaTimeoutError("Unable to bootstrap")
        return admin

    c = Collector(
        CollectorConfig(**FAST), admin_factory=flaky, producer_factory=lambda _: FakeProducer()
    )
    stats = c.run(once=True, duration_s=30)

    assert (stats.snapshots, stats.failed_snapshots) == (1, 2)
    assert "Unable to bootstrap" in (stats.last_error or "")
    assert stats.events_published == 7  # 5 groups, the topics, the end offsets


def test_run_once_without_duration_tries_once() -> None:
    def down(_: CollectorConfig) -> Any:
        raise kafka_errors.KafkaTimeoutError("Unable to bootstrap")

    stats = Collector(CollectorConfig(**FAST), admin_factory=down).run(once=True)

    assert (stats.snapshots, stats.failed_snapshots) == (0, 1)


def test_failed_publish_fails_the_snapshot_and_reconnects() -> None:
    admins: list[FakeAdmin] = []
    producers = [FakeProducer(kafka_errors.KafkaTimeoutError("no ack")), FakeProducer()]

    def new_admin(_: CollectorConfig) -> FakeAdmin:
        admins.append(fake_admin())
        return admins[-1]

    c = Collector(
        CollectorConfig(**FAST),
        admin_factory=new_admin,
        producer_factory=lambda _: producers.pop(0),
    )
    stats = c.run(once=True, duration_s=30)

    assert (stats.snapshots, stats.failed_snapshots) == (1, 1)
    assert len(admins) == 2 and admins[0].closed


def test_run_loops_until_stopped() -> None:
    stop = threading.Event()
    admin = fake_admin()
    count = 0

    def producer_factory(_: CollectorConfig) -> FakeProducer:
        return FakeProducer()

    class Counting(Collector):
        def snapshot_once(self) -> Any:
            nonlocal count
            count += 1
            if count == 3:
                stop.set()
            return super().snapshot_once()

    stats = Counting(
        CollectorConfig(**FAST), admin_factory=lambda _: admin, producer_factory=producer_factory
    ).run(stop=stop)

    assert stats.snapshots == 3 and stats.failed_snapshots == 0


def test_partial_errors_are_logged_when_new_then_quietly(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    denied = kafka_errors.GroupAuthorizationFailedError("denied")
    admin = fake_admin(fail={"describe_groups": ("app-2", denied)})
    reports: list[Any] = []

    class Twice(Collector):
        def snapshot_once(self) -> Any:
            reports.append(super().snapshot_once())
            if len(reports) == 2:
                stop.set()
            return reports[-1]

    caplog.set_level(logging.DEBUG, logger="streaming.collector")
    stats = Twice(
        CollectorConfig(group_filter="app-.*", **FAST),
        admin_factory=lambda _: admin,
        producer_factory=lambda _: FakeProducer(),
    ).run(stop=stop)

    assert stats.errors == 2
    [message] = reports[0].errors
    assert message.startswith("describe_groups (app-2): ")
    assert "GroupAuthorizationFailedError: denied" in message
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if "snapshot error" in r.message]
    assert logged == [
        (logging.WARNING, f"snapshot error: {message}"),
        (logging.DEBUG, f"snapshot error: {message}"),
    ]


def test_run_stops_after_duration() -> None:
    admin = fake_admin()
    config = CollectorConfig(backoff_initial_s=0.01, interval_s=0.05)
    c = Collector(config, admin_factory=lambda _: admin, producer_factory=lambda _: FakeProducer())

    stats = c.run(duration_s=0.3)

    assert 2 <= stats.snapshots <= 7


# --------------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--interval", "0"], "interval_s"),
        (["--kafka-option", "linger_ms=1"], "not a passthrough option"),
        (["--bootstrap-server", "nohost"], "bootstrap_servers"),
        (["--duration", "-1"], "--duration"),
        (["--topic", "a b"], "topic"),
    ],
)
def test_cli_rejects_bad_settings_before_connecting(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_collect(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_takes_security_options_from_the_environment_and_flags_win(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    class Recording:
        def __init__(self, config: CollectorConfig) -> None:
            seen.update(config.kafka_options)

        def run(self, **_kwargs: Any) -> Any:
            return collector.RunStats(snapshots=1)

        def close(self) -> None:
            pass

    monkeypatch.setattr(collector.cli, "Collector", Recording)
    env = {
        "security.protocol": "SASL_SSL",
        "sasl-mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "from-env",
        "sasl_plain_password": "s3cret",
        "ssl_check_hostname": False,
    }
    monkeypatch.setenv(KAFKA_OPTIONS_ENV, json.dumps(env))
    argv = ["--once", "--kafka-option", "sasl_plain_username=from-flag"]
    assert cli_collect([*argv, "--broker-check-timeout", "0"]) == 0
    assert seen == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "from-flag",
        "sasl_plain_password": "s3cret",
        "ssl_check_hostname": False,
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("security_protocol=SSL", "not valid JSON"),
        ('["security_protocol", "SSL"]', "expected a JSON object"),
        ('{"ssl_cafile": 7}', "ssl_cafile: expected a string, got 7"),
        ('{"linger_ms": "5"}', "'linger_ms' is not a passthrough option"),
        ('{"sasl_mechanism": "plain"}', "sasl_mechanism must be one of"),
        ('{"ssl_context": "x"}', "Python object"),
    ],
)
def test_bad_security_options_in_the_environment_are_named(
    value: str, message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(CollectorConfigError, match=re.escape(message)) as raised:
        kafka_options_from_env({KAFKA_OPTIONS_ENV: value})
    assert str(raised.value).startswith(KAFKA_OPTIONS_ENV + ":")
    monkeypatch.setenv(KAFKA_OPTIONS_ENV, value)
    assert cli_collect(["--once"]) == 2  # before connecting
    assert KAFKA_OPTIONS_ENV in capsys.readouterr().err


def test_no_security_options_in_the_environment() -> None:
    assert kafka_options_from_env({}) == {}
    assert kafka_options_from_env({KAFKA_OPTIONS_ENV: "  "}) == {}


def test_cli_usage_errors_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_collect(["--interval", "soon"]) == 2
    assert cli_collect(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--bootstrap-server", "--interval", "--topic", "--cluster", "--once"):
        assert flag in out
    assert "--duration" in out and "--kafka-option" in out
    assert "127.0.0.1:19092" in out


# --------------------------------------------------------------------------- one event model


def test_the_published_schema_is_generated_from_the_model() -> None:
    """``streaming/schemas/membership_event_v<N>.json`` is what ``make schema`` writes from
    :mod:`streaming.membership_event`: the files and the model cannot drift apart."""
    from streaming import membership_event

    for version in membership_event.SCHEMA_VERSIONS:
        assert load_schema(version) == membership_event.json_schema(version)
    assert membership_event.main(["--check"]) == 0


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_model_reads_back_what_the_collector_writes(name: str) -> None:
    """Encode (collector) -> decode (tracker's model) -> encode gives the same bytes."""
    from streaming import membership_event

    for event in build_events(SCENARIOS[name], cluster="test", snapshot_id="snap"):
        raw = event.encode()[1]
        decoded = membership_event.decode(json.loads(raw))
        assert not isinstance(decoded, membership_event.Unsupported)
        assert msgspec.json.encode(decoded) == raw


def test_schema_and_model_reject_the_same_mutations(
    validator: jsonschema.Draft202012Validator,
) -> None:
    """Each mutation of a valid event is refused by both the schema and the model's decoder
    (and each valid one accepted by both)."""
    from streaming import membership_event

    good = json.loads(build_events(answers(), cluster="c", snapshot_id="s")[0].encode()[1])
    bad = [
        {**good, "membership_source": "guess"},
        {**good, "snapshot_ts_ms": 1.5},
        {**good, "snapshot_ts_ms": -1},
        {**good, "cluster": ""},
        {**good, "member_count": -1},
        {**good, "members": [{**good["members"][0], "member_id": 7}]},
        {**good, "errors": [{"stage": 3, "message": "x"}]},
        {**good, "session_timeout_ms": 0},
    ]
    for event in bad:
        assert not validator.is_valid(event), event
        with pytest.raises(membership_event.EventFormatError):
            membership_event.decode(event)
    for event in (good, {**good, "a_future_additive_field": 1}):
        assert validator.is_valid(event)
        assert isinstance(membership_event.decode(event), membership_event.GroupEvent)


# --------------------------------------------------------------------------- version 2


def _v2(events: Sequence[MembershipEvent]) -> list[tuple[str, str | None]]:
    """(key, event_type or None for a tombstone) of each event."""
    return [(e.key, None if e.value is None else e.value["event_type"]) for e in events]


def test_changes_publish_a_group_once_then_heartbeats_then_tombstones() -> None:
    from streaming.collector.changes import Changes

    changes = Changes(cluster="c", heartbeat_interval_ms=10_000, full_interval_ms=60_000)
    one = answers()
    first = changes.events(one, snapshot_id="1")
    groups = sorted(g["group_id"] for g in one.groups)

    assert _v2(first) == [*((g, "group") for g in groups), ("c", "topics"),
                          ("c\x00end_offsets", "end_offsets")]  # fmt: skip
    later = dataclasses.replace(one, snapshot_ts_ms=one.snapshot_ts_ms + 5_000)
    polled = changes.events(dataclasses.replace(later, end_offsets_ts_ms=None), snapshot_id="2")
    assert _v2(polled) == [("c\x00poll", "poll")]  # unchanged: named in the poll's event
    assert polled[0].value is not None and polled[0].value["group_ids"] == groups
    beat_ts = one.snapshot_ts_ms + 10_000
    beats = changes.events(
        dataclasses.replace(one, snapshot_ts_ms=beat_ts, end_offsets_ts_ms=None), snapshot_id="3"
    )
    assert _v2(beats) == [(f"{g}\x00heartbeat", "heartbeat") for g in groups]
    assert all(b.partition_key == b.value["group_id"] for b in beats if b.value)
    # a group that changed: its event; the others are named in the poll's event
    g = groups[0]
    moved = dict(one.descriptions[g], group_state="PreparingRebalance")
    changed = dataclasses.replace(
        one,
        snapshot_ts_ms=beat_ts + 5_000,
        descriptions={**one.descriptions, g: moved},
        end_offsets_ts_ms=None,
    )
    event, poll = changes.events(changed, snapshot_id="4")
    assert event.key == g and event.value is not None
    assert event.value["state"] == "PreparingRebalance"
    assert poll.value is not None and poll.value["group_ids"] == groups[1:]
    # a group no longer listed: the tombstones of its two keys
    rest = [x for x in one.groups if x["group_id"] != groups[-1]]
    gone_ts = beat_ts + 10_000
    changes.events(dataclasses.replace(changed, snapshot_ts_ms=beat_ts + 7_000), snapshot_id="5")
    out = changes.events(
        dataclasses.replace(changed, snapshot_ts_ms=gone_ts, groups=rest), snapshot_id="6"
    )
    last = groups[-1]
    assert (last, None) in _v2(out) and (f"{last}\x00heartbeat", None) in _v2(out)
    assert ("c", "topics") in _v2(out)  # the listed groups changed


def test_changes_publish_end_offsets_that_moved_and_all_of_them_at_the_full_cadence() -> None:
    from streaming.collector.changes import Changes

    changes = Changes(cluster="c", heartbeat_interval_ms=60_000, full_interval_ms=60_000)
    one = answers()

    def offsets(a: AdminAnswers, sid: str) -> dict[str, Any]:
        [e] = [x for x in changes.events(a, snapshot_id=sid) if x.key == "c\x00end_offsets"]
        assert e.value is not None
        return e.value

    first = offsets(one, "1")
    assert first["full"] is True and first["topics"]
    moved = dict(one.end_offsets)
    (topic, partition), value = next(iter(sorted(moved.items())))
    moved[(topic, partition)] = value + 7
    second = offsets(
        dataclasses.replace(one, snapshot_ts_ms=one.snapshot_ts_ms + 30_000, end_offsets=moved),
        "2",
    )
    assert second["full"] is False
    assert second["previous_end_offsets_ts_ms"] == first["end_offsets_ts_ms"]
    # too soon after the first event for changes: every partition, as its end offset
    assert [(t["topic"], t["partitions"]) for t in second["topics"]] == [
        (t["topic"], t["partitions"]) for t in first["topics"]
    ]
    assert {
        (t["topic"], p): o
        for t in second["topics"]
        for p, o in zip(t["partitions"], t["end_offsets"], strict=True)
    } == {tp: o for tp, o in moved.items() if tp[0] in {t["topic"] for t in first["topics"]}}
    third_moved = dict(moved)
    third_moved[(topic, partition)] = value + 9
    third = offsets(
        dataclasses.replace(
            one, snapshot_ts_ms=one.snapshot_ts_ms + 45_000, end_offsets=third_moved
        ),
        "3",
    )
    assert third["topics"] == [
        {
            "topic": topic,
            "partitions": [],
            "end_offsets": [],
            "moved_partitions": [partition],
            "moved_by": [2],
        }
    ]
    still = offsets(
        dataclasses.replace(
            one, snapshot_ts_ms=one.snapshot_ts_ms + 50_000, end_offsets=third_moved
        ),
        "3b",
    )
    assert still["topics"] == []  # nothing moved: published all the same (freshness)
    fourth = offsets(
        dataclasses.replace(
            one, snapshot_ts_ms=one.snapshot_ts_ms + 60_000, end_offsets=third_moved
        ),
        "4",
    )
    assert fourth["full"] is True
    assert sum(len(t["partitions"]) for t in fourth["topics"]) == sum(
        len(t["partitions"]) for t in first["topics"]
    )


def test_changes_give_a_moved_partition_as_its_change_once_its_topic_is_steady() -> None:
    """A partition the previous event gave, on a topic the same groups consumed in the two
    events before, moves by its change; every partition of a topic a group newly consumes
    goes as its end offset (the group has none to add a change to), and so does every
    partition of a topic whose end offsets could not be read in the previous event."""
    from streaming.collector.changes import Changes

    changes = Changes(cluster="c", heartbeat_interval_ms=60_000, full_interval_ms=600_000)
    one = answers()
    t0 = one.snapshot_ts_ms

    def offsets(
        moves: dict[tuple[str, int], int], at_s: int, failed: str | None = None
    ) -> dict[str, Any]:
        moved = {tp: o + moves.get(tp, 0) for tp, o in one.end_offsets.items() if tp[0] != failed}
        issues = [Issue("list_partition_offsets", "NotLeaderForPartitionError", topic=failed)]
        a = dataclasses.replace(
            one,
            snapshot_ts_ms=t0 + at_s * 1000,
            end_offsets=moved,
            issues=[*one.issues, *(issues if failed else [])],
        )
        [e] = [x for x in changes.events(a, snapshot_id=str(at_s)) if x.key == "c\x00end_offsets"]
        assert e.value is not None
        return e.value

    tp = sorted(one.end_offsets)[0]
    offsets({}, 0)  # full
    offsets({tp: 5}, 30)  # one earlier event only: end offsets
    third = offsets({tp: 12}, 60)
    assert third["previous_end_offsets_ts_ms"] is not None
    [entry] = third["topics"]
    assert entry["topic"] == tp[0] and entry["partitions"] == [] and entry["end_offsets"] == []
    assert entry["moved_partitions"] == [tp[1]] and entry["moved_by"] == [7]
    # the last event failed on the topic: end offsets again
    failed = offsets({tp: 20}, 90, failed=tp[0])
    assert tp[0] not in {t["topic"] for t in failed["topics"]}
    after = offsets({tp: 25}, 120)
    topic_partitions = sorted(p for t, p in one.end_offsets if t == tp[0])
    assert [(t["partitions"], t["moved_partitions"]) for t in after["topics"]] == [
        (topic_partitions, [])
    ]


def test_gather_asks_offset_fetch_only_for_groups_new_or_whose_state_moved() -> None:
    admin = fake_admin()
    first = gather_answers(admin, CollectorConfig(group_filter="app-.*"))
    known = {
        g: (next(x["group_state"] for x in first.groups if x["group_id"] == g), offsets)
        for g, offsets in first.committed.items()
        if g != "app-2"  # as if new
    }
    moved = [dict(g, group_state="PreparingRebalance") if g["group_id"] == "app-1" else g
             for g in admin.groups]  # fmt: skip
    admin = fake_admin(groups=moved)

    again = gather_answers(
        admin, CollectorConfig(group_filter="app-.*"), end_offsets="none", known_committed=known
    )

    assert dict(admin.calls)["list_group_offsets"] == ["app-1", "app-2"]
    assert again.committed["app-848"] == first.committed["app-848"]  # reused
    assert again.end_offsets == {} and again.end_offsets_ts_ms is None
    assert "list_partition_offsets" not in dict(admin.calls)


@pytest.mark.parametrize(
    ("listed_state", "described_state", "asked"),
    [
        ("Stable", "Stable", False),  # settled, as described: reused
        ("Empty", "Empty", False),
        ("Stable", "Empty", True),  # the state moved since its description
        ("Empty", "Stable", True),
        ("PreparingRebalance", "PreparingRebalance", True),  # rebalancing: every poll
        ("CompletingRebalance", "CompletingRebalance", True),
        ("Dead", "Dead", True),
        (None, None, True),  # no state listed (ListGroups before v4): no way to tell
    ],
)
def test_to_describe_reuses_only_a_settled_group_listed_in_its_described_state(
    listed_state: str | None, described_state: str | None, asked: bool
) -> None:
    from streaming.collector.admin import to_describe

    entry = {"group_id": "g", "group_type": "classic", "group_state": listed_state}
    known = {"g": {**CLASSIC, "group_id": "g", "group_state": described_state}}

    ask, reused = to_describe([entry], known)

    assert (ask, reused) == ((["g"], {}) if asked else ([], {"g": known["g"]}))


def test_to_describe_asks_for_new_groups_every_group_on_a_full_pass_and_no_kip848_group() -> None:
    from streaming.collector.admin import to_describe

    groups = [listed("old"), listed("new"), listed("g-848", "consumer")]
    known = {"old": {**CLASSIC, "group_id": "old"}}

    assert to_describe(groups, known) == (["new"], {"old": known["old"]})
    assert to_describe(groups, None) == (["old", "new"], {})


def test_collector_describes_every_group_at_the_describe_interval_and_moved_ones_between() -> None:
    admin, producer = fake_admin(), FakeProducer()
    now = [1_000.0]
    config = CollectorConfig(
        group_filter="app-.*|other", interval_s=5, describe_interval_s=30, heartbeat_interval_s=60
    )
    c = Collector(
        config,
        admin_factory=lambda _: admin,
        producer_factory=lambda _: producer,
        clock=lambda: now[0],
    )

    def described_at(ts: float) -> list[str]:
        now[0] = ts
        admin.calls.clear()
        report = c.snapshot_once()
        asked = [g for m, ids in admin.calls if m == "describe_groups" for g in ids]
        assert report.described_groups == len(asked)
        return asked

    assert described_at(1_000) == ["app-1", "app-2", "other"]  # the first poll: a full pass
    assert described_at(1_005) == []  # all settled, as described
    admin.groups = [
        dict(g, group_state="PreparingRebalance") if g["group_id"] == "app-2" else g
        for g in admin.groups
    ]
    admin.descriptions["app-2"] = {
        **admin.descriptions["app-2"],
        "group_state": "PreparingRebalance",
    }
    assert described_at(1_010) == ["app-2"]  # its state moved
    assert described_at(1_015) == ["app-2"]  # still rebalancing
    admin.groups = [dict(g, group_state="Stable") for g in admin.groups]
    admin.descriptions["app-2"] = {**admin.descriptions["app-2"], "group_state": "Stable"}
    assert described_at(1_020) == ["app-2"]  # settled again: its state moved
    assert described_at(1_025) == []
    assert described_at(1_030) == ["app-1", "app-2", "other"]  # 30 s after the last full pass
    admin.groups.append(listed("app-3"))
    admin.descriptions["app-3"] = {**CLASSIC, "group_id": "app-3"}
    assert described_at(1_035) == ["app-3"]  # new
    # a failed snapshot forgets what was published: the next poll is a full pass
    admin.fail = {"list_groups": ("*", kafka_errors.KafkaConnectionError("down"))}
    now[0] = 1_040
    with pytest.raises(SnapshotError):
        c.snapshot_once()
    admin.fail = {}
    assert described_at(1_045) == ["app-1", "app-2", "app-3", "other"]


def test_changes_name_unchanged_groups_every_poll_event_interval_and_the_poll_before_a_change() -> (
    None
):
    from streaming.collector.changes import Changes

    changes = Changes(
        cluster="c",
        heartbeat_interval_ms=60_000,
        full_interval_ms=600_000,
        poll_event_interval_ms=15_000,
    )
    one = answers(end_offsets_ts_ms=None)
    t0 = one.snapshot_ts_ms
    groups = sorted(g["group_id"] for g in one.groups)
    first = changes.events(one, snapshot_id="0")
    assert [e.value["previous_poll_ts_ms"] for e in first if e.value and e.key in groups] == [
        None,
        None,
    ]  # new groups
    published = {
        k: _v2(changes.events(dataclasses.replace(one, snapshot_ts_ms=t0 + k), snapshot_id=str(k)))
        for k in range(5_000, 35_000, 5_000)
    }
    assert published == {
        5_000: [("c\x00poll", "poll")],  # the first poll after the start: due
        10_000: [],
        15_000: [],
        20_000: [("c\x00poll", "poll")],
        25_000: [],
        30_000: [],
    }
    first_digest = next(e.value["digest"] for e in first if e.key == "g-classic" and e.value)
    moved = dict(CLASSIC, group_state="PreparingRebalance")
    event, *rest = changes.events(
        dataclasses.replace(one, snapshot_ts_ms=t0 + 35_000, descriptions={"g-classic": moved}),
        snapshot_id="35",
    )
    assert event.key == "g-classic" and event.value is not None
    assert event.value["previous_poll_ts_ms"] == t0 + 30_000  # named by no poll event
    assert event.value["previous_digest"] == first_digest
    assert _v2(rest) == [("c\x00poll", "poll")]  # 15 s since the last one: due


# --------------------------------------------------------------------------- chunks


def wide_answers(
    ts: int,
    topics: int = 40,
    *,
    partitions: int = 8,
    moved: Mapping[str, int] | None = None,
    leaders: Mapping[str, int] | None = None,
) -> AdminAnswers:
    """A group per topic (``g-007`` consumes ``topic-007``), ``g-wide`` consuming partition 0
    of every topic, ``g-idle`` touching none; end offsets of 10 digits, ``moved[t]`` added
    to topic ``t``'s; ``leaders[t]``: topic ``t``'s partitions led by that broker."""
    moved, leaders = moved or {}, leaders or {}
    names = [f"topic-{i:03d}" for i in range(topics)]
    committed: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {
        f"g-{i:03d}": {TopicPartition(t, p): OffsetAndMetadata(p, "", 0) for p in range(partitions)}
        for i, t in enumerate(names)
    }
    committed["g-wide"] = {TopicPartition(t, 0): OffsetAndMetadata(1, "", 0) for t in names}
    metas = []
    for t in names:
        meta = topic_meta(t, partitions)
        if t in leaders:
            for p in meta["partitions"]:
                p["leader_id"] = leaders[t]
        metas.append(meta)
    return AdminAnswers(
        snapshot_ts_ms=ts,
        cluster=CLUSTER,
        groups=[listed(g) for g in committed] + [listed("g-idle", state="Empty")],
        committed=committed,
        topics=metas,
        end_offsets={
            (t, p): 1_000_000_000 + 1_000 * i + p + moved.get(t, 0)
            for i, t in enumerate(names)
            for p in range(partitions)
        },
        end_offsets_ts_ms=ts + 20,
    )


def _records(events: Sequence[MembershipEvent], event_type: str) -> list[MembershipEvent]:
    return [e for e in events if e.value is not None and e.value["event_type"] == event_type]


def _touching(a: AdminAnswers, topics: set[str]) -> set[str]:
    return {g for g, offsets in a.committed.items() if {tp[0] for tp in offsets} & topics}


def test_pack_fills_chunks_in_order_within_the_bound() -> None:
    from streaming.collector.chunks import Piece, json_length, pack

    def size(chunk: Any, pieces: Sequence[Piece]) -> int:
        own = [p for p in pieces if p.topic in chunk.topics]
        return sum(p.size for p in own) + sum(json_length(g) + 1 for g in chunk.groups)

    pieces = [Piece(None, 0, frozenset({"idle"}))] + [
        Piece(f"t{i}", 300, frozenset({f"g{i}", "wide"})) for i in range(10)
    ]
    chunks = pack(pieces, fixed=100, bound=1_000)
    assert [t for c in chunks for t in c.topics] == [f"t{i}" for i in range(10)]
    assert all(100 + size(c, pieces) <= 1_000 for c in chunks)
    assert len(chunks) == 5  # two topics and their groups fit, a third does not
    assert "idle" in chunks[0].groups and all("wide" in c.groups for c in chunks)
    # a topic longer than the bound alone: a chunk of its own, between the others
    big = [pieces[1], Piece("huge", 5_000, frozenset({"h"})), pieces[2]]
    assert [c.topics for c in pack(big, fixed=100, bound=1_000)] == [("t0",), ("huge",), ("t1",)]
    # a topic reaching more groups than fit beside it: repeated, its groups shared out
    crowd = frozenset(f"group-{i:04d}" for i in range(200))
    shared = pack([Piece("t", 100, crowd)], fixed=100, bound=1_000)
    assert len(shared) > 1 and all(c.topics == ("t",) for c in shared)
    assert frozenset().union(*(c.groups for c in shared)) == crowd
    assert sum(len(c.groups) for c in shared) == len(crowd)  # each group in one chunk
    assert all(100 + 100 + sum(json_length(g) + 1 for g in c.groups) <= 1_000 for c in shared)
    assert pack([], fixed=100, bound=1_000) == [chunks_of_nothing := pack([], fixed=1, bound=2)[0]]
    assert chunks_of_nothing.topics == () and chunks_of_nothing.groups == frozenset()


def test_changes_split_topics_and_end_offsets_into_self_contained_chunks() -> None:
    from streaming.collector.changes import Changes, end_offsets_key, topics_key

    a = wide_answers(1_795_238_759_399)
    whole = Changes(cluster="c", heartbeat_interval_ms=60_000, full_interval_ms=600_000)
    split = Changes(
        cluster="c", heartbeat_interval_ms=60_000, full_interval_ms=600_000, chunk_bytes=4096
    )
    unsplit = whole.events(a, snapshot_id="s")
    [one_topics], [one_ends] = _records(unsplit, "topics"), _records(unsplit, "end_offsets")
    events = split.events(a, snapshot_id="s")
    topics, ends = _records(events, "topics"), _records(events, "end_offsets")
    assert one_topics.value is not None and one_ends.value is not None
    assert len(one_topics.encode()[1] or b"") > 4096 and len(topics) > 3 and len(ends) > 1
    validator = jsonschema.Draft202012Validator(load_schema(2))
    for records, key in ((topics, topics_key), (ends, end_offsets_key)):
        assert [r.key for r in records] == [key("c", i) for i in range(len(records))]
        assert all(r.partition_key == "c" for r in records)
        for i, r in enumerate(records):
            assert r.value is not None
            assert (r.value["chunk"], r.value["chunks"]) == (i, len(records))
            assert len(r.encode()[1] or b"") <= 4096
            assert_valid(validator, r.value)
    assert topics[0].key == "c" and ends[0].key == "c\x00end_offsets"  # the unsplit keys
    # topics: each in one chunk, as the whole event has them; the chunk's groups touch them
    listed_topics = [t for r in topics for t in r.value["topics"]]  # type: ignore[index]
    assert listed_topics == one_topics.value["topics"]
    for i, r in enumerate(topics):
        assert r.value is not None
        names = {t["topic"] for t in r.value["topics"]}
        assert set(r.value["group_ids"]) == _touching(a, names) | ({"g-idle"} if i == 0 else set())
        assert r.value["brokers"] == one_topics.value["brokers"]
    # end offsets: the covered topics split the consumed ones; every partition in its chunk
    covered = [t for r in ends for t in r.value["covered_topics"]]  # type: ignore[index]
    assert (
        covered == sorted({tp[0] for tp in a.end_offsets})
        and one_ends.value["covered_topics"] is None
    )
    assert [t for r in ends for t in r.value["topics"]] == one_ends.value["topics"]  # type: ignore[index]
    for r in ends:
        assert r.value is not None and r.value["full"] is True
        assert {t["topic"] for t in r.value["topics"]} == set(r.value["covered_topics"])
        assert set(r.value["group_ids"]) == _touching(a, set(r.value["covered_topics"]))
    # moved: a chunk per share of the moved partitions, covering all the same topics
    later = wide_answers(a.snapshot_ts_ms + 30_000, moved={f"topic-{i:03d}": 5 for i in range(40)})
    again = _records(split.events(later, snapshot_id="s2"), "end_offsets")
    assert len(again) > 1 and all(r.value and r.value["full"] is False for r in again)
    assert [t for r in again for t in r.value["covered_topics"]] == covered  # type: ignore[index]
    # nothing moved: one record, about every topic
    still = dataclasses.replace(later, snapshot_ts_ms=later.snapshot_ts_ms + 30_000)
    [last] = _records(split.events(still, snapshot_id="s3"), "end_offsets")
    assert last.value is not None and last.value["topics"] == []
    assert (
        last.value["covered_topics"] is None
        and last.value["group_ids"] == one_ends.value["group_ids"]
    )


def _compacted(published: Sequence[MembershipEvent]) -> dict[str, Any]:
    """What a compacted topic keeps of the records: the latest value of each key, keys whose
    latest record is a tombstone gone."""
    latest: dict[str, Any] = {}
    for e in published:
        latest[e.key] = e.value
    return {k: v for k, v in latest.items() if v is not None}


def _content(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in ("snapshot_id", "snapshot_ts_ms")}


def test_chunk_keys_stay_put_and_dropped_chunks_get_tombstones() -> None:
    from streaming.collector.changes import Changes

    def changes() -> Changes:
        return Changes(
            cluster="c", heartbeat_interval_ms=60_000, full_interval_ms=600_000, chunk_bytes=4096
        )

    split = changes()
    ts = 1_795_238_759_399
    published = split.events(wide_answers(ts), snapshot_id="1")
    before = {r.key: r.value for r in _records(published, "topics")}
    full_ends = [r.key for r in _records(published, "end_offsets")]
    assert len(full_ends) >= 2
    # the next publishing gives every partition again (too soon for changes)
    published += split.events(wide_answers(ts + 15_000), snapshot_id="1b")
    # one topic's leader moved: its chunk only, under the same key
    leaders = {"topic-013": 3}
    moved = split.events(wide_answers(ts + 30_000, leaders=leaders), snapshot_id="2")
    published += moved
    [changed] = _records(moved, "topics")
    assert changed.key in before and changed.value is not None
    assert "topic-013" in {t["topic"] for t in changed.value["topics"]}
    assert changed.value["chunk"] == list(before).index(changed.key)
    # nothing moved: one end_offsets record, the full event's other keys tombstoned
    assert [(e.key, e.value is None) for e in moved if "end_offsets" in e.key] == [
        (full_ends[0], False),
        *((key, True) for key in full_ends[1:]),
    ]
    # fewer topics: fewer chunks; the keys past the last one get tombstones
    fewer = split.events(wide_answers(ts + 60_000, 12, leaders=leaders), snapshot_id="3")
    published += fewer
    kept = _records(fewer, "topics")
    assert kept[0].value is not None  # chunk 0 names the groups, which changed
    count = kept[0].value["chunks"]
    assert 1 < count < len(before)
    assert [e.key for e in fewer if e.value is None and "topics" in e.key] == list(before)[count:]
    # the compacted topic holds exactly the current chunks: the topics a fresh collector
    # would publish now, and the last end_offsets publishing
    fresh = changes().events(wide_answers(ts + 60_000, 12, leaders=leaders), snapshot_id="4")
    compacted = _compacted(published)
    assert {k: _content(v) for k, v in compacted.items() if v["event_type"] == "topics"} == {
        e.key: _content(e.value) for e in _records(fresh, "topics") if e.value is not None
    }
    assert {k for k, v in compacted.items() if v["event_type"] == "end_offsets"} == {
        e.key for e in _records(fewer, "end_offsets")
    }


def test_the_collector_tombstones_the_chunk_keys_of_a_poll_before_a_failed_one() -> None:
    """A failed poll starts the collector's memory again; the chunk keys it had published
    are remembered, so the next publishing tombstones those past its chunks."""

    def cluster(n: int) -> dict[str, Any]:
        names = [f"topic-{i:03d}" for i in range(n)]
        return {
            "groups": [listed(f"g-{i:03d}", "consumer") for i in range(n)],
            "offsets": {
                f"g-{i:03d}": {TopicPartition(t, p): OffsetAndMetadata(p, "", -1) for p in range(8)}
                for i, t in enumerate(names)
            },
            "topics": {t: topic_meta(t, 8) for t in names},
        }

    admin = fake_admin(**cluster(40))
    producers = [FakeProducer(), FakeProducer()]
    sent = [p.sent for p in producers]
    c = Collector(
        CollectorConfig(topic="mon", cluster="c", chunk_bytes=4096, **FAST),
        admin_factory=lambda _: admin,
        producer_factory=lambda _: producers.pop(0),
    )
    c.snapshot_once()
    first = [k.decode() for _, k, v in sent[0] if k.startswith(b"c") and v is not None]
    topics_keys = [k for k in first if k == "c" or k.startswith("c\x00topics")]
    assert len(topics_keys) > 4
    smaller = cluster(12)
    admin.groups, admin.offsets = smaller["groups"], smaller["offsets"]
    admin.topics = {**smaller["topics"], "mon": admin.topics["mon"]}
    c._producer.error = kafka_errors.KafkaTimeoutError("no ack")
    with pytest.raises(SnapshotError):
        c.snapshot_once()  # its tombstones may not have been written
    c.close()
    c.snapshot_once()
    third = [(k.decode(), v is None) for _, k, v in sent[1] if k.startswith(b"c")]
    kept = [k for k, gone in third if not gone and (k == "c" or k.startswith("c\x00topics"))]
    assert 1 < len(kept) < len(topics_keys)
    assert [k for k, gone in third if gone and "topics" in k] == topics_keys[len(kept) :]
