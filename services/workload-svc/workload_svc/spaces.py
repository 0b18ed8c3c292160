"""Development spaces: their operations (create, update, start/stop, delete), their dry runs and
their reads (list, describe, one HTTP request to the space through the API server's service
proxy), over the cluster's Kubernetes API. The Workspace object is the only record: a space is
read live, never from the database.

Each mutation reads actual state first and decides with the pure functions of
`domain.spaces`; a create, start or stop then polls until the space is Running (or Stopped).
"""

from __future__ import annotations

import builtins
from typing import Any, Protocol

from shared.contracts.plan import FieldChange, Plan, PlannedObject
from shared.contracts.spaces import (
    SPACE_NAMESPACE,
    SPACE_PORT,
    CreateSpace,
    DeleteSpace,
    SetSpaceStatus,
    UpdateSpace,
)
from shared.contracts.subjects import query_subject
from shared.errors import PermanentError
from shared.queries import BadRequest
from shared.service import Area
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow
from workload_svc.access import Kube
from workload_svc.adapters.space_proxy import SpaceAnswer, space_request
from workload_svc.domain import spaces as domain

KubeObject = dict[str, Any]
SPACES = query_subject("workload", "spaces")
SPACE = query_subject("workload", "space")
SPACE_HTTP = query_subject("workload", "space_http")
TEMPLATES = query_subject("workload", "space_templates")


class SpaceClusters(Protocol):
    """access.Clusters: a usable cluster's Kubernetes API."""

    async def kube(self, cluster: str, *, any_status: bool = False) -> Kube: ...


def _gpu_nodes(nodes: list[KubeObject], gpus: int) -> int:
    count = 0
    for node in nodes:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        try:
            if int(str(allocatable.get(domain.GPU, 0))) >= gpus:
                count += 1
        except ValueError:
            continue
    return count


class Spaces:
    def __init__(self, clusters: SpaceClusters) -> None:
        self.clusters = clusters

    async def _found(self, kube: Kube, cluster: str, name: str) -> KubeObject:
        found = await kube.get(domain.API_VERSION, domain.KIND, name, SPACE_NAMESPACE)
        if found is None:
            raise domain.missing(cluster, name)
        return found

    # ---- dry runs (the workflows decide with the same functions) --------------------------

    async def plan_create(self, command: CreateSpace) -> Plan:
        kube = await self.clusters.kube(command.cluster)
        spec = command.spec
        served = await kube.serves(domain.API_VERSION, domain.KIND)
        missing_claims = [
            v.claim for v in spec.volumes if not await kube.claim_exists(SPACE_NAMESPACE, v.claim)
        ]
        plan = domain.plan_create(
            command.cluster,
            spec,
            command.owner,
            served=served,
            existing=await kube.get(domain.API_VERSION, domain.KIND, spec.name, SPACE_NAMESPACE)
            if served
            else None,
            missing_claims=missing_claims,
            gpu_nodes=_gpu_nodes(await kube.nodes(""), spec.gpu) if spec.gpu else 1,
        )
        if spec.template is not None:
            await self._admitted(kube, spec.template, plan.objects[0].body)
        return plan

    async def _admitted(self, kube: Kube, template: str, body: KubeObject | None) -> None:
        """The Workspace as the API server would admit it (dry run): a space outside its
        template's bounds is refused before it is accepted, naming the field."""
        assert body is not None
        try:
            await kube.apply(body, dry_run=True)
        except PermanentError as exc:
            if exc.code not in ("Kubernetes400", "KubernetesInvalid"):
                raise
            raise domain.template_refusal(template, exc.message) from exc

    async def plan_update(self, command: UpdateSpace) -> Plan:
        kube = await self.clusters.kube(command.cluster)
        found = await self._found(kube, command.cluster, command.name)
        if command.change.volumes:
            for volume in command.change.volumes:
                if not await kube.claim_exists(SPACE_NAMESPACE, volume.claim):
                    raise PermanentError(
                        "InvalidSpace",
                        f"volumes: claim {volume.claim} is not one of the cluster's storage claims",
                        "GET /api/v1/clusters/{name}/storage lists them",
                    )
        diff = domain.change_diff(found, command.change)
        body = domain.changed_workspace(found, command.change)
        template = ((found.get("spec") or {}).get("templateRef") or {}).get("name")
        if diff and template:
            await self._admitted(kube, str(template), body)
        return domain.plan_patch(command.cluster, command.name, "UpdateSpace", diff, body)

    async def plan_status(self, command: SetSpaceStatus) -> Plan:
        kube = await self.clusters.kube(command.cluster)
        found = await self._found(kube, command.cluster, command.name)
        now = (found.get("spec") or {}).get("desiredStatus", "Running")
        diff = (
            {}
            if now == command.desired
            else {"desired_status": FieldChange(actual=now, requested=command.desired)}
        )
        body = domain.status_workspace(found, command.desired)
        return domain.plan_patch(command.cluster, command.name, "SetSpaceStatus", diff, body)

    async def plan_delete(self, command: DeleteSpace) -> Plan:
        kube = await self.clusters.kube(command.cluster)
        found = await kube.get(domain.API_VERSION, domain.KIND, command.name, SPACE_NAMESPACE)
        return Plan(
            command="DeleteSpace",
            target=f"{command.cluster}/{command.name}",
            noop=found is None,
            objects=[]
            if found is None
            else [
                PlannedObject(
                    action="delete",
                    api_version=domain.API_VERSION,
                    kind=domain.KIND,
                    name=command.name,
                    namespace=SPACE_NAMESPACE,
                )
            ],
        )

    # ---- reads ----------------------------------------------------------------------------

    async def list(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        cluster = _text(request, "cluster")
        kube = await self.clusters.kube(cluster, any_status=True)
        if not await kube.serves(domain.API_VERSION, domain.KIND):
            return []
        found = await kube.list_objects(domain.API_VERSION, domain.KIND, "")  # type: ignore[attr-defined]
        return sorted((domain.view(cluster, o) for o in found), key=lambda v: str(v["name"]))

    async def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        cluster, name = _text(request, "cluster"), _text(request, "name")
        kube = await self.clusters.kube(cluster, any_status=True)
        return domain.view(cluster, await self._found(kube, cluster, name))

    async def http(self, request: dict[str, Any]) -> dict[str, Any]:
        """One GET to the space's JupyterLab, through the API server's service proxy."""
        cluster, name = _text(request, "cluster"), _text(request, "name")
        path = request.get("path") or ""
        if not isinstance(path, str):
            raise BadRequest("path is not a string", "pass the path under the space's URL")
        kube = await self.clusters.kube(cluster)
        found = await self._found(kube, cluster, name)
        if domain.phase(found) != "Running":
            raise PermanentError(
                "SpaceNotRunning",
                f"space {name} is {domain.phase(found)}",
                "start it (POST .../spaces/{space}/start) and wait until it is Running",
            )
        answer: SpaceAnswer = await space_request(kube, SPACE_NAMESPACE, name, SPACE_PORT, path)
        return {"status": answer.status, "content_type": answer.content_type, "body": answer.body}

    async def templates(self, request: dict[str, Any]) -> builtins.list[dict[str, Any]]:
        """The cluster's WorkspaceTemplates (none without the Spaces add-on)."""
        cluster = _text(request, "cluster")
        kube = await self.clusters.kube(cluster, any_status=True)
        if not await kube.serves(domain.API_VERSION, domain.TEMPLATE_KIND):
            return []
        found = await kube.list_objects(domain.API_VERSION, domain.TEMPLATE_KIND, "")  # type: ignore[attr-defined]
        return sorted((domain.template_view(t) for t in found), key=lambda v: str(v["name"]))

    def routes(self) -> dict[str, Any]:
        return {
            SPACES: self.list,
            SPACE: self.describe,
            SPACE_HTTP: self.http,
            TEMPLATES: self.templates,
        }

    def planners(self) -> dict[str, Any]:
        async def create(payload: dict[str, Any]) -> Plan:
            return await self.plan_create(CreateSpace.from_payload(payload))

        async def update(payload: dict[str, Any]) -> Plan:
            return await self.plan_update(UpdateSpace.from_payload(payload))

        async def status(payload: dict[str, Any]) -> Plan:
            return await self.plan_status(SetSpaceStatus.from_payload(payload))

        async def delete(payload: dict[str, Any]) -> Plan:
            return await self.plan_delete(DeleteSpace.from_payload(payload))

        return {
            CreateSpace.__name__: create,
            UpdateSpace.__name__: update,
            SetSpaceStatus.__name__: status,
            DeleteSpace.__name__: delete,
        }

    # ---- workflows ------------------------------------------------------------------------

    async def _until(self, cluster: str, name: str, wanted: str) -> Done | Pending:
        kube = await self.clusters.kube(cluster)
        found = await self._found(kube, cluster, name)
        now = domain.phase(found)
        if now == wanted:
            return Done({"status": now})
        if now == "Failed":
            raise PermanentError(
                "SpaceFailed",
                f"space {name} is degraded: "
                + "; ".join(
                    str(c.get("message"))
                    for c in (found.get("status") or {}).get("conditions") or []
                    if c.get("type") == "Degraded"
                ),
                "describe the space and read its pod's events",
            )
        return Pending(f"space {name} is {now}")

    def workflows(self) -> dict[str, Workflow[Any]]:
        async def create(ctx: StageContext[CreateSpace]) -> Done | Submitted:
            plan = await self.plan_create(ctx.cmd)
            kube = await self.clusters.kube(ctx.cmd.cluster)
            body = plan.objects[0].body or {}
            await kube.apply(body)
            return Submitted(f"{ctx.cmd.cluster}/{ctx.cmd.spec.name}", {"applied": True})

        async def created(ctx: StageContext[CreateSpace]) -> Done | Pending:
            return await self._until(ctx.cmd.cluster, ctx.cmd.spec.name, "Running")

        async def update(ctx: StageContext[UpdateSpace]) -> Done:
            plan = await self.plan_update(ctx.cmd)
            if plan.noop:
                return Done({"diff": {}}, noop=True)
            kube = await self.clusters.kube(ctx.cmd.cluster)
            await kube.apply(plan.objects[0].body or {})
            return Done({"diff": {k: v.model_dump(mode="json") for k, v in plan.diff.items()}})

        async def status(ctx: StageContext[SetSpaceStatus]) -> Done | Submitted:
            plan = await self.plan_status(ctx.cmd)
            if not plan.noop:
                kube = await self.clusters.kube(ctx.cmd.cluster)
                await kube.apply(plan.objects[0].body or {})
            return Submitted(f"{ctx.cmd.cluster}/{ctx.cmd.name}", {"changed": not plan.noop})

        async def settled(ctx: StageContext[SetSpaceStatus]) -> Done | Pending:
            wanted = "Running" if ctx.cmd.desired == "Running" else "Stopped"
            return await self._until(ctx.cmd.cluster, ctx.cmd.name, wanted)

        async def delete(ctx: StageContext[DeleteSpace]) -> Done:
            kube = await self.clusters.kube(ctx.cmd.cluster)
            gone = await kube.delete(domain.API_VERSION, domain.KIND, ctx.cmd.name, SPACE_NAMESPACE)
            return Done({"deleted": gone}, noop=not gone)

        return {
            CreateSpace.__name__: Workflow(
                kind=CreateSpace.kind(),
                domain="workload",
                command=CreateSpace,
                stages=(
                    Stage(
                        "create", "Create the space and wait until it is Running", create, created
                    ),
                ),
            ),
            UpdateSpace.__name__: Workflow(
                kind=UpdateSpace.kind(),
                domain="workload",
                command=UpdateSpace,
                stages=(Stage("update", "Apply the changed settings to the space", update),),
            ),
            SetSpaceStatus.__name__: Workflow(
                kind=SetSpaceStatus.kind(),
                domain="workload",
                command=SetSpaceStatus,
                stages=(
                    Stage("status", "Start or stop the space and wait for it", status, settled),
                ),
            ),
            DeleteSpace.__name__: Workflow(
                kind=DeleteSpace.kind(),
                domain="workload",
                command=DeleteSpace,
                stages=(Stage("delete", "Delete the space", delete),),
            ),
        }

    def area(self) -> Area:
        return Area(workflows=self.workflows(), planners=self.planners(), read_routes=self.routes())


def _text(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} is missing", f"pass {key}")
    return value
