"""Cluster dependencies: the declared, versioned component set and its reconciliation.

The set (`dependency_set`) is ordered and each component names the ones it `requires`. A
reconcile pass reads what is installed (EKS add-ons through DescribeAddon, manifests through the
`hyperpilot.io/component-version` label on their objects), computes a pure `plan`
(install | upgrade | unchanged | wait, in order), applies what differs once the component's
requirements are ready, and reports each component. A pass over a cluster that already matches
makes no mutating call.

No helm binary is involved: the Helm-chart components are declared as the manifests their charts
render to, and applied with server-side apply (which is what Helm itself ends up doing); the
chart version is the component version recorded on every object.

Add-ons are asynchronous (CREATING -> ACTIVE), so the `dependencies` stage returns `Submitted`
after its first pass and each poll is another pass, until every component is ready.
Workloads are not waited for: their pods schedule on HyperPod nodes, which join later.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from cluster_svc.domain.components.addons import eks_addons
from cluster_svc.domain.components.base import (
    Component,
    KubeApi,
    KubeFactory,
    KubeObject,
    cluster_access,
    is_managed,
    object_ref,
    object_version,
)
from cluster_svc.domain.components.device_plugins import efa_device_plugin, nvidia_device_plugin
from cluster_svc.domain.components.hyperpod_chart import (
    deep_health_check,
    health_monitoring_agent,
    job_auto_restart,
)
from cluster_svc.domain.components.hyperpod_training import hyperpod_pytorch_job_crd
from cluster_svc.domain.components.keda import keda
from cluster_svc.domain.components.kubeflow import mpi_operator, training_operators
from cluster_svc.domain.components.kuberay import kuberay_operator
from cluster_svc.domain.components.load_balancer import load_balancer_controller
from cluster_svc.domain.components.namespaces import namespaces
from cluster_svc.domain.kube_storage import delete_storage_stage, storage_stage
from shared.contracts.commands import CreateCluster, DeleteCluster
from shared.contracts.dependencies import ReconcileDependencies
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted

DEPENDENCY_SET_VERSION = "2026.11"

Action = Literal["install", "upgrade", "unchanged", "wait"]
State = Literal["absent", "ready", "busy", "degraded", "failed", "external"]
READY_STATES = frozenset({"ready", "degraded", "external"})
ADDON_BUSY = frozenset({"CREATING", "UPDATING", "DELETING"})
ADDON_FAILED = frozenset({"CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED"})


def dependency_set(cluster_name: str, region: str) -> list[Component]:
    """Everything a HyperPod EKS cluster needs before its nodes join, in install order."""
    return ordered(
        [
            namespaces(),
            *eks_addons(),
            health_monitoring_agent(region),
            deep_health_check(),
            job_auto_restart(),
            nvidia_device_plugin(),
            efa_device_plugin(),
            training_operators(),
            mpi_operator(),
            hyperpod_pytorch_job_crd(),
            kuberay_operator(),
            load_balancer_controller(cluster_name, region),
            keda(),
        ]
    )


def ordered(components: Sequence[Component]) -> list[Component]:
    """The declared order, with each component moved after everything it requires."""
    by_name = {c.name: c for c in components}
    result: list[Component] = []
    state: dict[str, int] = {}

    def visit(component: Component) -> None:
        if state.get(component.name) == 2:
            return
        if state.get(component.name) == 1:
            raise ValueError(f"dependency cycle through {component.name}")
        state[component.name] = 1
        for name in component.requires:
            if name not in by_name:
                raise ValueError(f"{component.name} requires unknown component {name}")
            visit(by_name[name])
        state[component.name] = 2
        result.append(component)

    for component in components:
        visit(component)
    return result


# ---- what is installed --------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """A component's installed state: its version (None when absent) and readiness."""

    version: str | None = None
    state: State = "absent"
    managed: bool = False  # installed by Hyperpilot
    detail: str = ""


ABSENT = Observed()


@dataclass(frozen=True)
class AddonState:
    name: str
    version: str
    status: str  # CREATING | ACTIVE | UPDATING | DEGRADED | DELETING | *_FAILED
    managed: bool
    issues: tuple[str, ...] = ()


def observe_addon(addon: AddonState | None) -> Observed:
    if addon is None:
        return ABSENT
    detail = "; ".join(addon.issues)
    if addon.status in ADDON_BUSY:
        return Observed(addon.version, "busy", addon.managed, addon.status)
    if addon.status in ADDON_FAILED:
        return Observed(addon.version, "failed", addon.managed, detail or addon.status)
    if addon.status == "DEGRADED":
        return Observed(addon.version, "degraded", addon.managed, detail)
    return Observed(addon.version, "ready", addon.managed)


def observe_manifests(component: Component, found: Sequence[KubeObject | None]) -> Observed:
    """Read a manifests component back from its objects as they are in the cluster.

    Objects present without Hyperpilot's labels belong to someone else (e.g. a CRD an EKS
    add-on installed) and count as provided; a component made only of such objects is
    `external`. A missing object means not (fully) installed; an object of another version
    means installed at that version.
    """
    present = [obj for obj in found if obj is not None]
    if not present:
        return ABSENT
    ours = [obj for obj in present if is_managed(obj, component.name)]
    if not ours and len(present) == len(found):
        return Observed(component.version, "external", False, "installed by another tool")
    if len(present) < len(found):
        return Observed(None, "absent", bool(ours), "partly installed")
    versions = sorted({object_version(obj) or "unknown" for obj in ours})
    other = [v for v in versions if v != component.version]
    version = other[0] if other else component.version
    if not all(established(obj) for obj in present):
        return Observed(version, "busy", True, "CustomResourceDefinition not yet established")
    return Observed(version, "ready", True)


def established(obj: KubeObject) -> bool:
    """CRDs are usable once Established; other kinds once they exist."""
    if obj.get("kind") != "CustomResourceDefinition":
        return True
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def objects_to_apply(component: Component, found: Sequence[KubeObject | None]) -> list[KubeObject]:
    """The component's objects that are missing or ours at another version (never others')."""
    wanted = component.objects()
    result = []
    for obj, current in zip(wanted, found, strict=True):
        if current is None or (
            is_managed(current, component.name) and object_version(current) != component.version
        ):
            result.append(obj)
    return result


# ---- the plan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    component: Component
    action: Action
    installed: str | None


def plan(components: Sequence[Component], observed: Mapping[str, Observed]) -> list[Step]:
    """What to do with each component, in an order that respects `requires`."""
    steps = []
    for component in ordered(components):
        seen = observed.get(component.name, ABSENT)
        action: Action
        if seen.state == "busy":
            action = "wait"
        elif seen.version is None:
            action = "install"
        elif seen.state == "external" or seen.version == component.version:
            action = "unchanged"
        else:
            action = "upgrade"
        steps.append(Step(component, action, seen.version))
    return steps


# ---- ports ----------------------------------------------------------------------------------


class AddonApi(Protocol):
    async def describe(self, cluster: str, name: str) -> AddonState | None: ...
    async def versions(self, name: str, kubernetes_version: str) -> list[str]: ...
    async def create(self, cluster: str, name: str, version: str, request_token: str) -> None: ...
    async def update(self, cluster: str, name: str, version: str) -> None: ...
    async def delete(self, cluster: str, name: str) -> None: ...


# ---- one reconcile pass -----------------------------------------------------------------------

IN_PROGRESS = {"install": "installing", "upgrade": "upgrading"}
FINISHED = {"installing": "installed", "upgrading": "upgraded"}


@dataclass
class PassResult:
    components: dict[str, dict[str, str]]  # name -> {version, status}
    ready: int
    total: int
    mutated: bool
    created: list[str]  # add-ons this control plane installed (tagged as such)

    @property
    def complete(self) -> bool:
        return self.ready == self.total

    def outputs(self) -> dict[str, Any]:
        return {
            "components": self.components,
            "created": self.created,
            "dependency_set": DEPENDENCY_SET_VERSION,
        }


@dataclass(frozen=True)
class Target:
    cluster: str
    kubernetes_version: str
    request_token: str  # makes CreateAddon idempotent across redeliveries


class Reconciler:
    """Observe, plan, apply: one pass over the component set of one cluster."""

    def __init__(self, components: Sequence[Component], kube: KubeApi, addons: AddonApi) -> None:
        self.components = ordered(components)
        self.kube = kube
        self.addons = addons

    async def observe(self, target: Target) -> tuple[dict[str, Observed], dict[str, list[Any]]]:
        async def one(component: Component) -> tuple[Observed, list[Any]]:
            if component.kind == "eks-addon":
                state = await self.addons.describe(target.cluster, component.name)
                return observe_addon(state), [state]
            found = await asyncio.gather(
                *(self.kube.get(*object_ref(obj)) for obj in component.manifests)
            )
            return observe_manifests(component, found), list(found)

        results = await asyncio.gather(*(one(c) for c in self.components))
        observed = {c.name: r[0] for c, r in zip(self.components, results, strict=True)}
        raw = {c.name: r[1] for c, r in zip(self.components, results, strict=True)}
        return observed, raw

    async def run_pass(self, target: Target, previous: Mapping[str, Any]) -> PassResult:
        observed, raw = await self.observe(target)
        for name, seen in observed.items():
            if seen.state == "failed":
                raise PermanentError(
                    "AddonFailed",
                    f"EKS add-on {name} is in a failed state: {seen.detail}",
                    f"inspect it with `aws eks describe-addon --cluster-name {target.cluster}"
                    f" --addon-name {name}`, fix the cause (often its IAM role), delete the"
                    " add-on, then retry the operation",
                )
        ready = {name for name, seen in observed.items() if seen.state in READY_STATES}
        history = {
            name: str(entry.get("status", ""))
            for name, entry in (previous.get("components") or {}).items()
        }
        statuses: dict[str, str] = {}
        mutated = False
        for step in plan(self.components, observed):
            component, name = step.component, step.component.name
            if step.action in ("unchanged", "wait"):
                statuses[name] = _settled(history.get(name), observed[name], step.action)
                continue
            if not all(r in ready for r in component.requires):
                statuses[name] = "waiting"
                continue
            mutated = True
            statuses[name] = IN_PROGRESS[step.action]
            ready.discard(name)  # an upgrade makes a ready component busy again
            if component.kind == "eks-addon":
                await self._apply_addon(target, step)
                continue
            applied = [await self.kube.apply(obj) for obj in objects_to_apply(component, raw[name])]
            if all(established(obj) for obj in applied):
                ready.add(name)
                statuses[name] = FINISHED[statuses[name]]
        created = sorted(
            c.name
            for c in self.components
            if c.kind == "eks-addon"
            and (observed[c.name].managed or statuses[c.name] == "installing")
        )
        return PassResult(
            components={
                c.name: {"version": c.version, "status": statuses[c.name]} for c in self.components
            },
            ready=sum(1 for c in self.components if c.name in ready),
            total=len(self.components),
            mutated=mutated,
            created=created,
        )

    async def _apply_addon(self, target: Target, step: Step) -> None:
        component = step.component
        offered = await self.addons.versions(component.name, target.kubernetes_version)
        if component.version not in offered:
            raise PermanentError(
                "AddonVersionUnavailable",
                f"EKS offers {component.name} {', '.join(offered) or 'in no version'} for"
                f" Kubernetes {target.kubernetes_version}, not {component.version}",
                f"use a Hyperpilot release whose dependency set supports Kubernetes"
                f" {target.kubernetes_version} (this is set {DEPENDENCY_SET_VERSION})",
            )
        if step.action == "install":
            token = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{target.request_token}/{component.name}"))
            await self.addons.create(target.cluster, component.name, component.version, token)
        else:
            await self.addons.update(target.cluster, component.name, component.version)


def _settled(previous: str | None, seen: Observed, action: Action) -> str:
    """The reported status of a component nothing is done to in this pass."""
    if previous is not None and previous in FINISHED:
        return FINISHED[previous] if seen.state in READY_STATES else previous
    if previous is not None and previous in FINISHED.values():
        return previous
    if action == "wait":
        return "pending"
    if seen.state == "degraded":
        return "degraded"  # installed, but EKS reports health issues (often: no nodes yet)
    return "unchanged"  # includes components another tool installed: left as they are


# ---- stages ---------------------------------------------------------------------------------


def create_stages(kube_factory: KubeFactory, addons: AddonApi) -> list[Stage]:
    """`dependencies` (needs eks_cluster, access_entries, oidc_provider) and `storage`."""

    def reconciler(
        ctx: StageContext[CreateCluster | ReconcileDependencies],
    ) -> tuple[Reconciler, Target]:
        cmd = ctx.cmd
        eks = ctx.outputs["eks_cluster"]
        access = cluster_access(eks)
        components = dependency_set(access.name, cmd.region)
        target = Target(access.name, cmd.spec.kubernetes_version, str(ctx.operation_id))
        return Reconciler(components, kube_factory(access), addons), target

    # What each pass of a running operation did, so a component installed during a poll is
    # reported as installed (a Pending result persists no outputs). After a restart, the
    # persisted outputs of the submit are the history instead.
    passes: dict[uuid.UUID, dict[str, Any]] = {}

    async def run(ctx: StageContext[Any]) -> Done | Submitted:
        rec, target = reconciler(ctx)
        result = await rec.run_pass(target, ctx.own_outputs)
        if result.complete:
            return Done(result.outputs(), noop=not result.mutated)
        passes[ctx.operation_id] = result.outputs()
        return Submitted(
            f"{target.cluster}/dependencies/{DEPENDENCY_SET_VERSION}", result.outputs()
        )

    async def poll(ctx: StageContext[Any]) -> Done | Pending:
        rec, target = reconciler(ctx)
        history = passes.get(ctx.operation_id) or ctx.own_outputs
        try:
            result = await rec.run_pass(target, history)
        except PermanentError:
            passes.pop(ctx.operation_id, None)
            raise
        if result.complete:
            passes.pop(ctx.operation_id, None)
            return Done(result.outputs())
        passes[ctx.operation_id] = result.outputs()
        return Pending(f"{result.ready}/{result.total} components ready")

    return [
        Stage(
            "dependencies",
            "Install the cluster's dependencies",
            run,
            poll,
            needs=("eks_cluster", "access_entries", "oidc_provider"),
        ),
        storage_stage(kube_factory),
    ]


def delete_stages(
    kube_factory: KubeFactory,
    addons: AddonApi,
    dependencies_after: tuple[str, ...] = ("delete_hyperpod",),
) -> list[Stage]:
    """`delete_storage`, then `delete_dependencies` (only the add-ons this control plane
    installed), which also waits for `dependencies_after` (HyperPod must go first)."""

    def targets(ctx: StageContext[DeleteCluster]) -> tuple[str | None, list[str]]:
        resources = ctx.cmd.resources
        cluster = (resources.get("eks_cluster") or {}).get("cluster_name")
        created = list((resources.get("dependencies") or {}).get("created") or [])
        return cluster, created

    async def remaining(cluster: str, names: list[str]) -> list[AddonState]:
        states = await asyncio.gather(*(addons.describe(cluster, n) for n in names))
        return [s for s in states if s is not None and s.managed]

    async def run(ctx: StageContext[Any]) -> Done | Submitted:
        cluster, created = targets(ctx)
        if cluster is None or not created:
            return Done({"removed": []}, noop=True)
        present = await remaining(cluster, created)
        if not present:
            return Done({"removed": []}, noop=True)
        for state in present:
            if state.status != "DELETING":
                await addons.delete(cluster, state.name)
        return Submitted(
            f"{cluster}/dependencies/delete", {"removed": sorted(s.name for s in present)}
        )

    async def poll(ctx: StageContext[Any]) -> Done | Pending:
        cluster, created = targets(ctx)
        assert cluster is not None
        left = await remaining(cluster, created)
        if left:
            return Pending(f"{len(created) - len(left)}/{len(created)} add-ons removed")
        return Done()

    return [
        delete_storage_stage(kube_factory),
        Stage(
            "delete_dependencies",
            "Remove the add-ons Hyperpilot installed",
            run,
            poll,
            needs=("delete_storage", *dependencies_after),
        ),
    ]
