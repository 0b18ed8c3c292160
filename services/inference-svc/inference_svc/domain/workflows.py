"""The workflows of inference-svc: deploy, scale, reassign a pool worker, delete.

Each first stage reads actual state and decides with the planner's function (`domain.plan`), so
a dry run and the operation agree; where requested equals actual the stage is `noop` and makes
no mutating call. Deploy and scale then poll the endpoint's status to a terminal state.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Protocol

import asyncpg

from inference_svc.domain.plan import (
    ClusterFacts,
    assign_plan,
    checked_pool_model,
    delete_plan,
    deploy_plan,
    scale_plan,
)
from inference_svc.domain.render import (
    MODEL_LABEL,
    KubeObject,
    ref,
    render,
    scale_target,
)
from inference_svc.domain.status import AVAILABLE, FAILED, Observed
from shared.contracts.events import Event
from shared.contracts.inference import (
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    EndpointDeleted,
    EndpointDeployed,
    EndpointScaled,
    EndpointSpec,
    PoolWorkerAssigned,
    ScaleEndpoint,
)
from shared.errors import PermanentError
from shared.stages import Done, Outcome, Pending, Stage, StageContext, Submitted, Workflow

DOMAIN = "inference"
# How long an endpoint may take to become available (large serving images take minutes to pull
# and models minutes to load) before the operation fails with what its pods report.
AVAILABLE_WITHIN = 30 * 60.0


class KubeOps(Protocol):
    async def get(
        self, api_version: str, kind: str, name: str, namespace: str
    ) -> KubeObject | None: ...

    async def apply(self, obj: KubeObject) -> KubeObject: ...

    async def merge_patch(
        self, api_version: str, kind: str, name: str, namespace: str, patch: KubeObject
    ) -> KubeObject: ...

    async def delete(self, api_version: str, kind: str, name: str, namespace: str) -> bool: ...


class Access(Protocol):
    async def kube(self, cluster: str) -> Any: ...

    async def facts(self, cluster: str, spec: EndpointSpec) -> ClusterFacts: ...

    async def recorded(self, cluster: str, name: str) -> EndpointSpec: ...

    async def present(self, cluster: str, spec: EndpointSpec) -> list[KubeObject]: ...

    async def scale_object(self, cluster: str, spec: EndpointSpec) -> KubeObject | None: ...

    async def observe(self, cluster: str, spec: EndpointSpec) -> Observed: ...


def _wait_available(access: Access, spec_of: Any) -> Stage:
    """Poll the endpoint until every replica is available (or it fails for good)."""

    async def run(ctx: StageContext[Any]) -> Done | Submitted:
        cluster, spec = await spec_of(ctx)
        seen = await access.observe(cluster, spec)
        if seen.status == AVAILABLE and all(
            out.get("noop") for name, out in ctx.outputs.items() if name != "available"
        ):
            return Done(_observed(seen), noop=True)
        return Submitted(f"{cluster}/{spec.namespace}/{spec.name}", {"since": time.time()})

    async def poll(ctx: StageContext[Any]) -> Done | Pending:
        cluster, spec = await spec_of(ctx)
        seen = await access.observe(cluster, spec)
        if seen.status == AVAILABLE:
            return Done(_observed(seen))
        if seen.status == FAILED:
            raise PermanentError(
                "EndpointFailed",
                seen.message or f"endpoint {spec.name} failed",
                f"GET /api/v1/endpoints/{spec.name}?cluster={cluster} shows its pods",
            )
        since = float(ctx.own_outputs.get("since") or time.time())
        if time.time() - since > AVAILABLE_WITHIN:
            raise PermanentError(
                "EndpointNotAvailable",
                f"endpoint {spec.name} is not available after {AVAILABLE_WITHIN / 60:.0f} minutes: "
                + (seen.message or f"{seen.ready_replicas}/{seen.replicas} replicas available"),
                f"GET /api/v1/endpoints/{spec.name}?cluster={cluster} shows its pods; fix the "
                "cause and retry the operation (POST /api/v1/operations/{id}/retry)",
            )
        return Pending(seen.message or f"{seen.ready_replicas}/{seen.replicas} available")

    return Stage("available", "Wait until the endpoint is available", run, poll, needs=("apply",))


def _observed(seen: Observed) -> dict[str, Any]:
    return {
        "status": seen.status,
        "replicas": seen.replicas,
        "ready_replicas": seen.ready_replicas,
        "address": seen.address,
    }


# ---- deploy ----------------------------------------------------------------------------------


def deploy_workflow(access: Access) -> Workflow[Any]:
    async def spec_of(ctx: StageContext[Any]) -> tuple[str, EndpointSpec]:
        command = DeployEndpoint.from_payload(ctx.command)
        return command.cluster, command.spec

    async def apply(ctx: StageContext[Any]) -> Done | Submitted:
        cluster, spec = await spec_of(ctx)
        plan = deploy_plan(spec, await access.facts(cluster, spec))
        kube = await access.kube(cluster)
        for planned in plan.objects:
            if planned.action == "delete":
                await kube.delete(planned.api_version, planned.kind, planned.name, spec.namespace)
                continue
            assert planned.body is not None
            await kube.apply(planned.body)
        if not plan.noop:
            await ctx.progress(f"applied {len(plan.objects)} object(s)")
        return Done(
            {
                "noop": plan.noop,
                "objects": [ref(o) for o in render(spec)],
                "applied": len(plan.objects),
            },
            noop=plan.noop,
        )

    async def on_start(
        conn: asyncpg.Connection, operation_id: uuid.UUID, command: dict[str, Any]
    ) -> None:
        deploy = DeployEndpoint.from_payload(command)
        spec = deploy.spec
        await conn.execute(
            "INSERT INTO endpoints (cluster, name, namespace, kind, spec, status, replicas,"
            " operation_id) VALUES ($1, $2, $3, $4, $5, 'deploying', $6, $7)"
            " ON CONFLICT (cluster, name) DO UPDATE SET spec = EXCLUDED.spec, kind = EXCLUDED.kind,"
            " namespace = EXCLUDED.namespace, replicas = EXCLUDED.replicas,"
            " operation_id = EXCLUDED.operation_id, updated_at = now()",
            deploy.cluster,
            spec.name,
            spec.namespace,
            spec.kind,
            spec.model_dump(mode="json"),
            spec.replicas,
            operation_id,
        )

    async def on_finish(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        deploy = DeployEndpoint.from_payload(outcome.command)
        spec = deploy.spec
        available = outcome.outputs.get("available") or {}
        objects = (outcome.outputs.get("apply") or {}).get("objects") or []
        if outcome.status in ("succeeded", "noop"):
            await conn.execute(
                "UPDATE endpoints SET status = 'available', objects = $3, replicas = $4,"
                " ready_replicas = $5, address = $6, message = NULL, updated_at = now()"
                " WHERE cluster = $1 AND name = $2",
                deploy.cluster,
                spec.name,
                objects,
                int(available.get("replicas") or spec.replicas),
                int(available.get("ready_replicas") or 0),
                available.get("address"),
            )
            if outcome.status == "succeeded":
                return [
                    EndpointDeployed(
                        cluster=deploy.cluster,
                        name=spec.name,
                        kind=spec.kind,
                        objects=[f"{o['kind']}/{o['name']}" for o in objects],
                    )
                ]
            return []
        error = outcome.error or {}
        await conn.execute(
            "UPDATE endpoints SET status = 'failed', message = $3, updated_at = now()"
            " WHERE cluster = $1 AND name = $2",
            deploy.cluster,
            spec.name,
            str(error.get("message") or outcome.status),
        )
        return []

    return Workflow(
        kind=DeployEndpoint.kind(),
        domain=DOMAIN,
        stages=(
            Stage("apply", "Check the rules and apply the endpoint's objects", apply),
            _wait_available(access, spec_of),
        ),
        on_start=on_start,
        on_finish=on_finish,
    )


# ---- scale -----------------------------------------------------------------------------------


def scale_workflow(access: Access) -> Workflow[Any]:
    async def spec_of(ctx: StageContext[Any]) -> tuple[str, EndpointSpec]:
        command = ScaleEndpoint.from_payload(ctx.command)
        return command.target.cluster, await access.recorded(
            command.target.cluster, command.target.name
        )

    async def apply(ctx: StageContext[Any]) -> Done | Submitted:
        command = ScaleEndpoint.from_payload(ctx.command)
        cluster, spec = await spec_of(ctx)
        actual = await access.scale_object(cluster, spec)
        plan = scale_plan(spec, cluster, actual, command.replicas)
        previous = plan.diff.get("replicas").actual if "replicas" in plan.diff else command.replicas  # type: ignore[union-attr]
        if plan.noop:
            return Done({"noop": True, "previous": previous}, noop=True)
        kube = await access.kube(cluster)
        api_version, kind, name = scale_target(spec)
        await kube.merge_patch(
            api_version, kind, name, spec.namespace, {"spec": {"replicas": command.replicas}}
        )
        return Done({"noop": False, "previous": previous})

    async def on_finish(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        command = ScaleEndpoint.from_payload(outcome.command)
        if outcome.status != "succeeded":
            return []
        target = command.target
        row = await conn.fetchrow(
            "SELECT spec FROM endpoints WHERE cluster = $1 AND name = $2",
            target.cluster,
            target.name,
        )
        if row is not None:
            spec = dict(row["spec"]) | {"replicas": command.replicas}
            available = outcome.outputs.get("available") or {}
            await conn.execute(
                "UPDATE endpoints SET spec = $3, replicas = $4, ready_replicas = $5,"
                " status = 'available', updated_at = now() WHERE cluster = $1 AND name = $2",
                target.cluster,
                target.name,
                spec,
                command.replicas,
                int(available.get("ready_replicas") or 0),
            )
        previous = (outcome.outputs.get("apply") or {}).get("previous")
        return [
            EndpointScaled(
                cluster=target.cluster,
                name=target.name,
                replicas=command.replicas,
                previous=previous,
            )
        ]

    return Workflow(
        kind=ScaleEndpoint.kind(),
        domain=DOMAIN,
        stages=(Stage("apply", "Set the replicas", apply), _wait_available(access, spec_of)),
        on_finish=on_finish,
    )


# ---- model pool ------------------------------------------------------------------------------


def assign_workflow(access: Access) -> Workflow[Any]:
    async def assign(ctx: StageContext[Any]) -> Done | Submitted:
        command = AssignPoolWorker.from_payload(ctx.command)
        cluster = command.target.cluster
        spec = await access.recorded(cluster, command.target.name)
        kube = await access.kube(cluster)
        pod = await kube.get("v1", "Pod", command.pod, spec.namespace)
        service_exists = False
        if command.model is not None:
            wanted = checked_pool_model(spec, command.model).service
            service_exists = await kube.get("v1", "Service", wanted, spec.namespace) is not None
        plan = assign_plan(spec, cluster, pod, command.model, service_exists)
        assert pod is not None
        previous = ((pod.get("metadata") or {}).get("labels") or {}).get(MODEL_LABEL)
        outputs = {
            "pod": command.pod,
            "uid": pod["metadata"].get("uid"),
            "previous": previous,
            "model": command.model,
        }
        for planned in plan.objects:
            if planned.action == "apply":
                assert planned.body is not None
                await kube.apply(planned.body)
            else:
                await kube.merge_patch(
                    "v1", "Pod", planned.name, spec.namespace, planned.body or {}
                )
        return Done(outputs, noop=plan.noop)

    async def on_finish(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        if outcome.status != "succeeded":
            return []
        command = AssignPoolWorker.from_payload(outcome.command)
        out = outcome.outputs.get("assign") or {}
        return [
            PoolWorkerAssigned(
                cluster=command.target.cluster,
                name=command.target.name,
                pod=command.pod,
                model=command.model,
                previous=out.get("previous"),
            )
        ]

    return Workflow(
        kind=AssignPoolWorker.kind(),
        domain=DOMAIN,
        stages=(Stage("assign", "Relabel the worker for its model", assign),),
        on_finish=on_finish,
    )


# ---- delete ----------------------------------------------------------------------------------


def delete_workflow(access: Access) -> Workflow[Any]:
    async def remove(ctx: StageContext[Any]) -> Done | Submitted:
        command = DeleteEndpoint.from_payload(ctx.command)
        cluster = command.target.cluster
        spec = await access.recorded(cluster, command.target.name)
        plan = delete_plan(spec, cluster, await access.present(cluster, spec))
        kube = await access.kube(cluster)
        for planned in plan.objects:
            await kube.delete(planned.api_version, planned.kind, planned.name, spec.namespace)
        return Done({"deleted": [f"{o.kind}/{o.name}" for o in plan.objects]}, noop=plan.noop)

    async def on_start(
        conn: asyncpg.Connection, operation_id: uuid.UUID, command: dict[str, Any]
    ) -> None:
        target = DeleteEndpoint.from_payload(command).target
        await conn.execute(
            "UPDATE endpoints SET status = 'deleting', operation_id = $3, updated_at = now()"
            " WHERE cluster = $1 AND name = $2",
            target.cluster,
            target.name,
            operation_id,
        )

    async def on_finish(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        target = DeleteEndpoint.from_payload(outcome.command).target
        if outcome.status not in ("succeeded", "noop"):
            return []
        await conn.execute(
            "DELETE FROM endpoints WHERE cluster = $1 AND name = $2", target.cluster, target.name
        )
        return [EndpointDeleted(cluster=target.cluster, name=target.name)]

    return Workflow(
        kind=DeleteEndpoint.kind(),
        domain=DOMAIN,
        stages=(Stage("delete", "Delete the endpoint's objects", remove),),
        on_start=on_start,
        on_finish=on_finish,
    )
