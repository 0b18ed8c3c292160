"""The qry.cluster.* responder over a real NATS server: what the gateway's `nc.request` gets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import nats
import orjson
import pytest
from nats.aio.client import Client as NATS

from cluster_svc.adapters.inspect import Inspector
from cluster_svc.adapters.pricing import PriceList
from cluster_svc.queries import (
    AVAILABILITY_ZONES,
    CHECK_CREATE,
    CLUSTERS,
    INSTANCE_TYPES,
    QUOTAS,
    SUBJECTS,
    TRAINING_PLANS,
    aws_hint,
    inspect_area,
)
from hyperpilot.infra import NatsServer
from shared.queries import QueryResponder
from sim.aws import SimulatedAws
from sim.testing import inject_fault
from tests.cluster_inspection.conftest import World, spec


@pytest.fixture
async def client(nats_server: NatsServer, inspector: Inspector) -> AsyncIterator[NATS]:
    """A NATS client of the gateway's kind, with a responder serving on another connection."""
    service = await nats.connect(nats_server.url)
    responder = responder_on(service, inspector)
    await responder.start()
    gateway = await nats.connect(nats_server.url)
    try:
        yield gateway
    finally:
        await gateway.close()
        await responder.stop()
        await service.close()


def responder_on(nc: NATS, inspector: Inspector) -> QueryResponder:
    """cluster-svc's responder, with the inspect routes alone."""
    routes = inspect_area(inspector, PriceList(inspector.aws)).read_routes
    return QueryResponder(nc, routes, "cluster-svc", stage_hint=aws_hint)


async def ask(nc: NATS, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await nc.request(subject, orjson.dumps(body), timeout=10)
    answer: dict[str, Any] = orjson.loads(reply.data)
    return answer


def test_subjects_are_the_gateways() -> None:
    assert SUBJECTS == (
        "qry.cluster.availability_zones",
        "qry.cluster.instance_types",
        "qry.cluster.quotas",
        "qry.cluster.training_plans",
        "qry.cluster.clusters",
        "qry.cluster.check_create",
    )


async def test_every_query_is_answered(client: NATS, world: World) -> None:
    region = {"region": "us-east-1"}
    zones = await ask(client, AVAILABILITY_ZONES, region)
    assert (
        zones["ok"]
        and {"zone_name": "us-east-1c", "zone_id": "use1-az2", "state": "available"}
        in zones["data"]
    )

    types = await ask(client, INSTANCE_TYPES, {**region, "availability_zone_id": "use1-az3"})
    names = {t["instance_type"] for t in types["data"]}
    assert "ml.p5.48xlarge" in names and "ml.p4d.24xlarge" not in names
    # each type with its list price per hour, from the (simulated) AWS Price List API
    by_name = {t["instance_type"]: t for t in types["data"]}
    assert by_name["ml.p5.48xlarge"]["price_per_hour"] == 113.068
    assert by_name["ml.p5.48xlarge"]["price_as_of"] == "2026-11-20"

    quota = await ask(client, QUOTAS, {**region, "instance_type": "ml.g5.8xlarge"})
    assert quota["ok"] and (quota["data"]["value"], quota["data"]["in_use"]) == (3.0, 2)

    plans = await ask(client, TRAINING_PLANS, region)
    assert {p["name"] for p in plans["data"]} >= {"p5-reserved", "p5-last-month"}

    clusters = await ask(client, CLUSTERS, region)
    assert {(c["kind"], c["name"], c["managed"]) for c in clusters["data"]} >= {
        ("eks", world.eks_name, True),
        ("hyperpod", world.managed_hyperpod, True),
        ("hyperpod", world.imported_hyperpod, False),
    }

    good = spec("fresh-cluster", workers={"instance_type": "ml.p5.48xlarge", "count": 1})
    assert await ask(client, CHECK_CREATE, {"spec": good.model_dump(mode="json"), **region}) == {
        "ok": True,
        "data": [],
    }
    wrong_zone = spec(
        "fresh-cluster", zone="use1-az3", gpu={"instance_type": "ml.p4d.24xlarge", "count": 1}
    )
    answer = await ask(client, CHECK_CREATE, {"spec": wrong_zone.model_dump(mode="json"), **region})
    assert answer["data"] == [
        {
            "field": "instance_groups[0].instance_type",
            "rule": "instance_type_offered",
            "message": "ml.p4d.24xlarge is not offered in use1-az3; "
            "it is offered in use1-az1, use1-az2, use1-az4 and use1-az6",
            "hint": "set availability_zone_id to one of use1-az1, use1-az2, use1-az4 and use1-az6",
        }
    ]


async def test_bad_requests_say_what_to_send(client: NATS) -> None:
    missing = await ask(client, QUOTAS, {"region": "us-east-1"})
    assert missing == {
        "ok": False,
        "error": {
            "code": "invalid_request",
            "message": "instance_type is required",
            "hint": "pass a value like ml.p5.48xlarge",
        },
    }
    other_region = await ask(client, AVAILABILITY_ZONES, {"region": "eu-west-1"})
    assert other_region["error"]["code"] == "invalid_request"
    assert other_region["error"]["message"] == (
        "region eu-west-1 is not served by this control plane (it serves us-east-1)"
    )
    bad_spec = await ask(client, CHECK_CREATE, {"spec": {"name": "x"}, "region": "us-east-1"})
    assert bad_spec["error"]["code"] == "invalid_request"
    assert bad_spec["error"]["message"].startswith("spec.availability_zone_id: ")
    not_json = await client.request(QUOTAS, b"{not json", timeout=10)
    assert orjson.loads(not_json.data)["error"]["code"] == "invalid_request"


async def test_aws_errors_are_answered_with_aws_code_and_message(
    client: NATS, sim: SimulatedAws
) -> None:
    denial = inject_fault(
        sim,
        "error",
        service="sagemaker",
        operation="ListTrainingPlans",
        code="AccessDeniedException",
        message="User is not authorized to perform sagemaker:ListTrainingPlans",
        status=400,
    )
    with denial:
        answer = await ask(client, TRAINING_PLANS, {})
    assert answer["error"]["code"] == "AccessDeniedException"
    assert (
        answer["error"]["message"]
        == "User is not authorized to perform sagemaker:ListTrainingPlans"
    )
    assert "grant cluster-svc's role" in answer["error"]["hint"]
    with inject_fault(sim, "server_error", service="ec2", operation="DescribeAvailabilityZones"):
        answer = await ask(client, AVAILABILITY_ZONES, {})
    assert answer["ok"] is False and answer["error"]["hint"] == "retry shortly"


async def test_replicas_share_the_queries(nats_server: NatsServer, inspector: Inspector) -> None:
    """Two responders in the queue group: each request is answered exactly once."""
    connections = [await nats.connect(nats_server.url) for _ in range(3)]
    responders = [responder_on(nc, inspector) for nc in connections[:2]]
    for responder in responders:
        await responder.start()
    try:
        inbox = connections[2].new_inbox()
        replies = await connections[2].subscribe(inbox)
        await connections[2].flush()
        for _ in range(4):
            await connections[2].publish(AVAILABILITY_ZONES, b"{}", reply=inbox)
        received = [await replies.next_msg(timeout=10) for _ in range(4)]
        assert all(orjson.loads(m.data)["ok"] for m in received)
        with pytest.raises(nats.errors.TimeoutError):
            await replies.next_msg(timeout=0.5)
    finally:
        for responder in responders:
            await responder.stop()
        for nc in connections:
            await nc.close()
