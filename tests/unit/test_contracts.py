import uuid

import pytest
from pydantic import ValidationError

from shared.contracts import COMMANDS, EVENTS, Envelope
from shared.contracts.commands import CreateStorageBucket
from shared.contracts.events import StageSucceeded
from shared.contracts.subjects import command_subject, domain_commands, event_subject
from shared.operations import command_envelope, request_hash


def test_subjects_follow_the_naming_scheme() -> None:
    assert CreateStorageBucket.subject() == "cmd.storage.create"
    assert CreateStorageBucket.kind() == "storage.create"
    assert command_subject("cluster", "create") == "cmd.cluster.create"
    assert event_subject("cluster", StageSucceeded.what) == "evt.cluster.stage_succeeded"
    assert domain_commands("workload") == "cmd.workload.>"


def test_envelope_round_trips_and_ignores_unknown_fields() -> None:
    env = Envelope(
        correlation_id=uuid.uuid4(),
        type="CreateStorageBucket",
        principal="p",
        payload={"name": "b"},
    )
    raw = env.to_bytes()
    assert Envelope.from_bytes(raw) == env
    newer = raw[:-1] + b',"added_later":1}'
    assert Envelope.from_bytes(newer) == env


def test_commands_ignore_unknown_fields_on_the_bus_but_not_at_the_edge() -> None:
    payload = {"name": "b", "region": "us-east-1", "new": True}
    assert CreateStorageBucket.from_payload(payload) == CreateStorageBucket(
        name="b", region="us-east-1"
    )
    with pytest.raises(ValidationError, match="new"):
        CreateStorageBucket.model_validate(payload)


def test_every_model_is_registered_by_name() -> None:
    assert COMMANDS["CreateStorageBucket"] is CreateStorageBucket
    assert EVENTS["StageSucceeded"] is StageSucceeded
    assert all(name == model.__name__ for name, model in EVENTS.items())


def test_attempt_message_ids_are_deterministic_and_distinct() -> None:
    op = uuid.uuid4()
    cmd = CreateStorageBucket(name="b", region="us-east-1")
    first = command_envelope(cmd, op, principal="p", source="rest", attempt=1)
    again = command_envelope(cmd, op, principal="p", source="rest", attempt=1)
    second = command_envelope(cmd, op, principal="p", source="rest", attempt=2)
    assert first.message_id == again.message_id != second.message_id


def test_request_hash_ignores_key_order_but_not_values() -> None:
    a = request_hash("storage.create", "b", {"name": "b", "region": "us-east-1"})
    b = request_hash("storage.create", "b", {"region": "us-east-1", "name": "b"})
    c = request_hash("storage.create", "b", {"region": "us-west-2", "name": "b"})
    assert a == b != c
