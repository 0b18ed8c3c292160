"""The workflows of inference-svc: deploy, scale, reassign a pool worker, delete.

Each first stage reads actual state and decides with the planner's function (`domain.plan`), so
a dry run and the operation agree; where requested equals actual the stage is `noop` and makes
no mutating call. Deploy and scale then poll the endpoint's status to a terminal state.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

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
from shared.contracts.inference import (
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    EndpointSpec,
    ScaleEndpoint,
)
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow

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


def deploy_workflow(access: Access) -> Workflow[DeployEndpoint]:
    async def spec_of(ctx: StageContext[DeployEndpoint]) -> tuple[str, EndpointSpec]:
        return ctx.cmd.cluster, ctx.cmd.spec

    async def apply(ctx: StageContext[DeployEndpoint]) -> Done | Submitted:
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

    return Workflow(
        kind=DeployEndpoint.kind(),
        domain=DOMAIN,
        stages=(
            Stage("apply", "Check the rules and apply the endpoint's objects", apply),
            _wait_available(access, spec_of),
        ),
        command=DeployEndpoint,
    )


# ---- scale -----------------------------------------------------------------------------------


def scale_workflow(access: Access) -> Workflow[ScaleEndpoint]:
    async def spec_of(ctx: StageContext[ScaleEndpoint]) -> tuple[str, EndpointSpec]:
        target = ctx.cmd.target
        return target.cluster, await access.recorded(target.cluster, target.name)

    async def apply(ctx: StageContext[ScaleEndpoint]) -> Done | Submitted:
        command = ctx.cmd
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

    return Workflow(
        kind=ScaleEndpoint.kind(),
        domain=DOMAIN,
        stages=(Stage("apply", "Set the replicas", apply), _wait_available(access, spec_of)),
        command=ScaleEndpoint,
    )


# ---- model pool ------------------------------------------------------------------------------


def assign_workflow(access: Access) -> Workflow[AssignPoolWorker]:
    async def assign(ctx: StageContext[AssignPoolWorker]) -> Done | Submitted:
        command = ctx.cmd
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

    return Workflow(
        kind=AssignPoolWorker.kind(),
        domain=DOMAIN,
        stages=(Stage("assign", "Relabel the worker for its model", assign),),
        command=AssignPoolWorker,
    )


# ---- delete ----------------------------------------------------------------------------------


def delete_workflow(access: Access) -> Workflow[DeleteEndpoint]:
    async def remove(ctx: StageContext[DeleteEndpoint]) -> Done | Submitted:
        command = ctx.cmd
        cluster = command.target.cluster
        spec = await access.recorded(cluster, command.target.name)
        plan = delete_plan(spec, cluster, await access.present(cluster, spec))
        kube = await access.kube(cluster)
        for planned in plan.objects:
            await kube.delete(planned.api_version, planned.kind, planned.name, spec.namespace)
        return Done({"deleted": [f"{o.kind}/{o.name}" for o in plan.objects]}, noop=plan.noop)

    return Workflow(
        kind=DeleteEndpoint.kind(),
        domain=DOMAIN,
        stages=(Stage("delete", "Delete the endpoint's objects", remove),),
        command=DeleteEndpoint,
    )
