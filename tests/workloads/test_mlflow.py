"""MLflow tracking servers: the plan from actual state, and the create operation with a fake API."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from shared.contracts.workloads import CreateTrackingServer, TrackingServerSpec
from shared.errors import PermanentError
from shared.stages import Done, Pending, StageContext, Submitted
from workload_svc.domain.mlflow import plan_tracking_server, tracking_server_workflow

SPEC = TrackingServerSpec(
    name="exp", artifact_store_uri="s3://bucket/mlflow", role_arn="arn:aws:iam::123456789012:role/r"
)


class FakeServers:
    def __init__(self) -> None:
        self.servers: dict[str, dict[str, Any]] = {}
        self.created = 0

    async def describe(self, name: str) -> dict[str, Any] | None:
        return self.servers.get(name)

    async def create(self, params: dict[str, Any]) -> str:
        self.created += 1
        self.servers[params["TrackingServerName"]] = {
            "TrackingServerName": params["TrackingServerName"],
            "TrackingServerArn": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/exp",
            "ArtifactStoreUri": params["ArtifactStoreUri"],
            "TrackingServerSize": params["TrackingServerSize"],
            "TrackingServerStatus": "Creating",
        }
        return str(self.servers[params["TrackingServerName"]]["TrackingServerArn"])


def ctx(command: dict[str, Any]) -> StageContext:
    async def report(message: str) -> None:
        return None

    parsed = CreateTrackingServer.from_payload(command)
    return StageContext(uuid.uuid4(), "server", command, {}, None, {}, report, parsed)


def test_plan_creates_or_is_a_noop_or_refuses() -> None:
    plan = plan_tracking_server(SPEC, None)
    assert not plan.noop and plan.calls[0].operation == "CreateMlflowTrackingServer"
    same = {"ArtifactStoreUri": SPEC.artifact_store_uri, "TrackingServerSize": "Small"}
    assert plan_tracking_server(SPEC, same).noop
    with pytest.raises(PermanentError) as info:
        plan_tracking_server(SPEC, {**same, "TrackingServerSize": "Large"})
    assert info.value.code == "TrackingServerExists"


async def test_create_then_poll_then_noop() -> None:
    api = FakeServers()
    workflow = tracking_server_workflow(api)
    (stage,) = workflow.stages
    assert stage.poll is not None
    command = CreateTrackingServer(region="us-east-1", spec=SPEC).model_dump(mode="json")
    assert isinstance(await stage.run(ctx(command)), Submitted)
    assert isinstance(await stage.poll(ctx(command)), Pending)
    api.servers["exp"]["TrackingServerStatus"] = "Created"
    done = await stage.poll(ctx(command))
    assert isinstance(done, Done) and done.outputs["arn"].endswith("/exp")
    again = await stage.run(ctx(command))
    assert isinstance(again, Done) and again.noop and api.created == 1
    api.servers["exp"]["TrackingServerStatus"] = "CreateFailed"
    with pytest.raises(PermanentError):
        await stage.poll(ctx(command))
