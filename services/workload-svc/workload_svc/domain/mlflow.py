"""MLflow tracking servers (SageMaker managed): the plan from actual state, and the operation.

Where a server of that name already exists with the requested artifact store and size, the
create ends `noop` with no call; with other settings it is refused (it is not changed here)."""

from __future__ import annotations

from typing import Any, Protocol

from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.contracts.workloads import (
    CreateTrackingServer,
    TrackingServerSpec,
)
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow

FAILED = frozenset({"CreateFailed", "DeleteFailed", "UpdateFailed", "Deleting"})


class TrackingServerApi(Protocol):
    async def describe(self, name: str) -> dict[str, Any] | None: ...

    async def create(self, params: dict[str, Any]) -> str: ...


def create_params(spec: TrackingServerSpec) -> dict[str, Any]:
    params: dict[str, Any] = {
        "TrackingServerName": spec.name,
        "ArtifactStoreUri": spec.artifact_store_uri,
        "RoleArn": spec.role_arn,
        "TrackingServerSize": spec.size,
        "Tags": [{"Key": "managed-by", "Value": "hyperpilot"}],
    }
    if spec.mlflow_version:
        params["MlflowVersion"] = spec.mlflow_version
    return params


def plan_tracking_server(spec: TrackingServerSpec, actual: dict[str, Any] | None) -> Plan:
    target = f"mlflow/{spec.name}"
    if actual is None:
        return Plan(
            command=CreateTrackingServer.__name__,
            target=target,
            noop=False,
            diff={"tracking_server": FieldChange(actual=None, requested=spec.name)},
            calls=[
                PlannedCall(
                    service="sagemaker",
                    operation="CreateMlflowTrackingServer",
                    params=create_params(spec),
                )
            ],
        )
    differs = {
        field: FieldChange(actual=actual.get(key), requested=wanted)
        for field, key, wanted in (
            ("artifact_store_uri", "ArtifactStoreUri", spec.artifact_store_uri),
            ("size", "TrackingServerSize", spec.size),
        )
        if actual.get(key) != wanted
    }
    if differs:
        raise PermanentError(
            "TrackingServerExists",
            f"tracking server {spec.name} exists with other settings: "
            + ", ".join(f"{k} is {v.actual}" for k, v in differs.items()),
            "pick another name, or send the existing settings",
        )
    return Plan(
        command=CreateTrackingServer.__name__,
        target=target,
        noop=True,
        notes=[f"tracking server {spec.name} exists ({actual.get('TrackingServerStatus')})"],
    )


def _ready(found: dict[str, Any]) -> Done | Pending:
    status = str(found.get("TrackingServerStatus"))
    if status in FAILED:
        raise PermanentError(
            "TrackingServerFailed",
            f"tracking server {found.get('TrackingServerName')} is {status}",
            "read the server's status in SageMaker; delete it and create it again",
        )
    if status in ("Created", "Updated", "Started"):
        return Done(
            {
                "arn": found.get("TrackingServerArn"),
                "url": found.get("TrackingServerUrl"),
                "status": status,
            }
        )
    return Pending(f"tracking server is {status}")


def tracking_server_workflow(api: TrackingServerApi) -> Workflow[CreateTrackingServer]:
    async def create(ctx: StageContext[CreateTrackingServer]) -> Done | Submitted:
        spec = ctx.cmd.spec
        actual = await api.describe(spec.name)
        plan = plan_tracking_server(spec, actual)
        if plan.noop and actual is not None:
            outcome = _ready(actual)
            if isinstance(outcome, Done):
                return Done(outcome.outputs, noop=True)
            return Submitted(str(actual.get("TrackingServerArn")))
        arn = await api.create(create_params(spec))
        return Submitted(arn)

    async def poll(ctx: StageContext[CreateTrackingServer]) -> Done | Pending:
        spec = ctx.cmd.spec
        found = await api.describe(spec.name)
        if found is None:
            raise PermanentError(
                "TrackingServerGone",
                f"tracking server {spec.name} disappeared while being created",
                "create it again",
            )
        return _ready(found)

    return Workflow(
        kind=CreateTrackingServer.kind(),
        domain="workload",
        stages=(Stage("server", "Create the MLflow tracking server", create, poll=poll),),
        command=CreateTrackingServer,
    )
