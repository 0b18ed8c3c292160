"""The SageMaker Spaces add-on (`amazon-sagemaker-spaces`): the jupyter-k8s operator and its
CRDs in `workspace.jupyter.org/v1alpha1` (Workspace, WorkspaceTemplate,
WorkspaceAccessStrategy), as github.com/jupyter-infra/jupyter-k8s `api/v1alpha1` defines them
and the HyperPod CLI's space module (`hyp create hyp-space`) writes them.

A Workspace whose `desiredStatus` is Running becomes a Deployment of one pod (container
`workspace`, its pods labelled `workspace.jupyter.org/workspace-name`) and a Service on port
8888; `status` carries `deploymentName`, `serviceName`, `accessURL` and the conditions
Available, Progressing, Degraded and Stopped. Stopped scales the Deployment to zero. Idle
shutdown (`idleShutdown.enabled`, `idleTimeoutInMinutes`) stops a space whose pod answered no
request for that long: the operator sets `desiredStatus: Stopped` itself, records an
`IdleShutdown` event, and (the emulator's own wording) its Stopped condition says why: reason
`IdleShutdown`, with the timeout. A minute of the timeout lasts the time profile's
`idle_minute` (60 s in `real`)."""

from __future__ import annotations

import copy
import time
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from sim.k8s.controllers.base import Controller, Rule, owner_ref, set_condition
from sim.k8s.errors import ApiError
from sim.k8s.operators.crds import ANY, CONDITIONS, INT, STRMAP, B, S, arr, crd, enum, obj
from sim.k8s.quantity import parse
from sim.k8s.store import Obj, WatchEvent, clone

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

GROUP = "workspace.jupyter.org"
API_VERSION = f"{GROUP}/v1alpha1"
WORKSPACES = f"workspaces.{GROUP}"
NAME_LABEL = f"{GROUP}/workspace-name"
CREATED_BY = f"{GROUP}/created-by"
CONTAINER = "workspace"
PORT = 8888

_RESOURCES = obj(limits=ANY, requests=ANY)
_IDLE = obj(
    ("enabled",),
    enabled=B,
    idleTimeoutInMinutes={"type": "integer", "minimum": 1},
    detection=ANY,
)
_REF = obj(("name",), name=S, namespace=S)
_SPEC_FIELDS: dict[str, Any] = {
    "displayName": S,
    "image": S,
    "desiredStatus": enum("Running", "Stopped"),
    "ownershipType": enum("Public", "OwnerOnly"),
    "accessType": enum("Public", "OwnerOnly"),
    "appType": S,
    "serviceAccountName": S,
    "resources": _RESOURCES,
    "storage": obj(storageClassName=S, size=S, mountPath=S),
    "volumes": arr(
        obj(
            ("name", "mountPath", "persistentVolumeClaimName"),
            name=S,
            mountPath=S,
            persistentVolumeClaimName=S,
        )
    ),
    "containerConfig": obj(command=arr(S), args=arr(S)),
    "nodeSelector": STRMAP,
    "affinity": ANY,
    "tolerations": arr(ANY),
    "lifecycle": ANY,
    "templateRef": _REF,
    "idleShutdown": _IDLE,
    "env": arr(ANY),
    "accessStrategy": _REF,
    "podSecurityContext": ANY,
    "containerSecurityContext": ANY,
    "initContainers": arr(ANY),
}
WORKSPACE = crd(
    GROUP,
    "Workspace",
    "workspaces",
    obj(
        ("spec",),
        spec=obj(("displayName",), **_SPEC_FIELDS),
        status=obj(
            deploymentName=S,
            serviceName=S,
            accessURL=S,
            accessResourceSelector=S,
            accessResources=arr(ANY),
            conditions=CONDITIONS,
        ),
    ),
    versions=("v1alpha1",),
    columns=(
        ("Available", "string", '.status.conditions[?(@.type=="Available")].status'),
        ("Progressing", "string", '.status.conditions[?(@.type=="Progressing")].status'),
        ("Degraded", "string", '.status.conditions[?(@.type=="Degraded")].status'),
    ),
)
_RANGE = obj(("min", "max"), min=S, max=S)
# github.com/jupyter-infra/jupyter-k8s api/v1alpha1/workspacetemplate_types.go: cluster-scoped,
# displayName and defaultImage required
WORKSPACE_TEMPLATE = crd(
    GROUP,
    "WorkspaceTemplate",
    "workspacetemplates",
    obj(
        spec=obj(
            ("displayName", "defaultImage"),
            displayName=S,
            description=S,
            defaultImage=S,
            allowedImages=arr(S),
            defaultResources=_RESOURCES,
            resourceBounds=obj(cpu=_RANGE, memory=_RANGE, gpu=_RANGE),
            primaryStorage=ANY,
            environmentVariables=arr(ANY),
            defaultContainerConfig=obj(command=arr(S), args=arr(S)),
            allowSecondaryStorages=B,
            defaultNodeSelector=STRMAP,
            defaultAffinity=ANY,
            defaultTolerations=arr(ANY),
            defaultOwnershipType=enum("Public", "OwnerOnly"),
            defaultIdleShutdown=_IDLE,
            idleShutdownOverrides=obj(allow=B, minTimeoutMinutes=INT, maxTimeoutMinutes=INT),
            defaultAccessType=enum("Public", "OwnerOnly"),
            defaultLifecycle=ANY,
            appType=S,
        ),
        status=obj(conditions=CONDITIONS),
    ),
    versions=("v1alpha1",),
    scope="Cluster",
    columns=(
        ("Display Name", "string", ".spec.displayName"),
        ("Default Image", "string", ".spec.defaultImage"),
    ),
)
WORKSPACE_ACCESS_STRATEGY = crd(
    GROUP,
    "WorkspaceAccessStrategy",
    "workspaceaccessstrategies",
    obj(
        spec=obj(
            displayName=S,
            accessURLTemplate=S,
            accessResourceTemplates=arr(ANY),
            createConnectionHandler=S,
            podEnvironmentVariables=arr(ANY),
        )
    ),
    versions=("v1alpha1",),
)
SPACES_CRDS = {
    f"workspaces.{GROUP}": WORKSPACE,
    f"workspacetemplates.{GROUP}": WORKSPACE_TEMPLATE,
    f"workspaceaccessstrategies.{GROUP}": WORKSPACE_ACCESS_STRATEGY,
}


class Activity:
    """When each workspace pod last answered a request (what idle shutdown reads)."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], float] = {}
        self.idled: dict[tuple[str, str], int] = {}  # stopped by idle shutdown: its minutes

    def touch(self, namespace: str, workspace: str, at: float | None = None) -> None:
        self.last[(namespace, workspace)] = time.monotonic() if at is None else at

    def since(self, namespace: str, workspace: str) -> float | None:
        return self.last.get((namespace, workspace))


_ACTIVITY: WeakKeyDictionary[Any, Activity] = WeakKeyDictionary()


def activity_of(server: ApiServer) -> Activity:
    found = _ACTIVITY.get(server)
    if found is None:
        found = _ACTIVITY[server] = Activity()
    return found


def idle_expired(spec: Obj, idle_since: float, now: float, minute: float = 60.0) -> bool:
    """Has a running workspace been idle past its `idleShutdown.idleTimeoutInMinutes`
    (minutes of `minute` seconds)?"""
    idle = spec.get("idleShutdown") or {}
    if not idle.get("enabled") or spec.get("desiredStatus", "Running") != "Running":
        return False
    minutes = int(idle.get("idleTimeoutInMinutes") or 0)
    return minutes > 0 and now - idle_since >= minutes * minute


def _alive(ws: Obj) -> bool:
    return not ws["metadata"].get("deletionTimestamp")


def pod_template(ws: Obj) -> Obj:
    """The workspace pod: its image, resources, the claims it mounts, where it may run."""
    spec = ws["spec"]
    name = ws["metadata"]["name"]
    config = spec.get("containerConfig") or {}
    container: Obj = {
        "name": CONTAINER,
        "image": spec.get("image") or "public.ecr.aws/sagemaker/sagemaker-distribution:3.2.0-cpu",
        "ports": [{"containerPort": PORT, "name": "http"}],
        "resources": clone(spec.get("resources") or {}),
        "env": list(spec.get("env") or []),
        "volumeMounts": [
            {"name": v["name"], "mountPath": v["mountPath"]} for v in spec.get("volumes") or []
        ],
    }
    for field in ("command", "args"):
        if config.get(field):
            container[field] = list(config[field])
    pod: Obj = {
        "containers": [container],
        "volumes": [
            {
                "name": v["name"],
                "persistentVolumeClaim": {"claimName": v["persistentVolumeClaimName"]},
            }
            for v in spec.get("volumes") or []
        ],
    }
    for field in ("nodeSelector", "affinity", "tolerations", "serviceAccountName"):
        if spec.get(field):
            pod[field] = clone(spec[field])
    return {"metadata": {"labels": {NAME_LABEL: name}}, "spec": pod}


class WorkspaceOperator(Controller):
    name = "jupyter-k8s-controller-manager"

    def active(self) -> bool:
        return self.api.registry.has_crd(GROUP, "workspaces")

    def build_rules(self) -> list[Rule]:
        return [Rule("reconcile", WORKSPACES, _alive, self.reconcile)]

    def watched(self) -> set[str]:
        return {WORKSPACES, "deployments.apps"}

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key != "deployments.apps":
            return []
        return self.owner_of(event, WORKSPACES, "Workspace")

    def reconcile(self, ws: Obj) -> None:
        meta = ws["metadata"]
        ns, name = meta["namespace"], meta["name"]
        spec = ws["spec"]
        running = spec.get("desiredStatus", "Running") == "Running"
        activity = activity_of(self.server)
        if running and activity.since(ns, name) is not None:
            since = activity.since(ns, name) or 0.0
            if idle_expired(spec, since, time.monotonic(), self.profile.idle_minute):
                minutes = int((spec.get("idleShutdown") or {}).get("idleTimeoutInMinutes") or 0)
                activity.idled[(ns, name)] = minutes
                stopped = clone(ws)
                stopped["spec"]["desiredStatus"] = "Stopped"
                self.update(WORKSPACES, stopped)
                self.event(ws, "IdleShutdown", "stopped after its idle timeout")
                return
        template = pod_template(ws)
        labels = {NAME_LABEL: name}
        deploy = self.store.get("deployments.apps", ns, name)
        replicas = 1 if running else 0
        if deploy is None:
            self.create(
                "deployments.apps",
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "labels": labels,
                        "ownerReferences": [owner_ref(ws)],
                    },
                    "spec": {
                        "replicas": replicas,
                        "selector": {"matchLabels": labels},
                        "strategy": {"type": "Recreate"},
                        "template": template,
                    },
                },
            )
            deploy = self.store.get("deployments.apps", ns, name)
        elif (
            int(deploy["spec"].get("replicas", 1)) != replicas
            or deploy["spec"]["template"]["spec"] != template["spec"]
        ):
            changed = clone(deploy)
            changed["spec"]["replicas"] = replicas
            changed["spec"]["template"] = template
            self.update("deployments.apps", changed)
            deploy = self.store.get("deployments.apps", ns, name)
        if self.store.get("services", ns, name) is None:
            self.create(
                "services",
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "labels": labels,
                        "ownerReferences": [owner_ref(ws)],
                    },
                    "spec": {
                        "selector": labels,
                        "ports": [{"name": "http", "port": PORT, "targetPort": PORT}],
                    },
                },
            )
        dstatus = (deploy or {}).get("status") or {}
        available = int(dstatus.get("availableReplicas", 0)) >= 1
        pods = int(dstatus.get("replicas", 0))
        status = clone(ws.get("status") or {})
        status.update(deploymentName=name, serviceName=name, accessURL=f"/workspaces/{ns}/{name}/")
        if running:
            ready = available
            set_condition(
                status,
                "Available",
                "True" if ready else "False",
                "ResourcesReady" if ready else "ResourcesNotReady",
                "the workspace pod is ready" if ready else "waiting for the workspace pod",
            )
            set_condition(
                status,
                "Progressing",
                "False" if ready else "True",
                "ResourcesReady" if ready else "Starting",
                "" if ready else "the workspace pod is starting",
            )
            set_condition(status, "Stopped", "False", "DesiredStateRunning")
            activity.idled.pop((ns, name), None)
            if ready and activity.since(ns, name) is None:
                activity.touch(ns, name)  # idle time counts from when it became ready
        else:
            gone = pods == 0
            set_condition(status, "Available", "False", "DesiredStateStopped")
            set_condition(
                status,
                "Progressing",
                "False" if gone else "True",
                "Stopped" if gone else "Stopping",
            )
            idled = activity.idled.get((ns, name))
            set_condition(
                status,
                "Stopped",
                "True" if gone else "False",
                ("IdleShutdown" if idled is not None else "DeploymentScaledDown")
                if gone
                else "Stopping",
                f"stopped after {idled} minutes without a request (idle shutdown)"
                if idled is not None
                else "",
            )
            activity.last.pop((ns, name), None)
        set_condition(status, "Degraded", "False", "NoError")
        if status != (ws.get("status") or {}):
            ws["status"] = status
            self.update_status(WORKSPACES, ws)


# -- templates ----------------------------------------------------------------------------

TEMPLATES = f"workspacetemplates.{GROUP}"
GPU = "nvidia.com/gpu"


def _deny(message: str) -> ApiError:
    return ApiError(
        400,
        f'admission webhook "workspace.{GROUP}" denied the request: {message}',
        reason="BadRequest",
    )


def _amount(resources: Obj, name: str) -> str | None:
    for part in ("requests", "limits"):
        value = (resources.get(part) or {}).get(name)
        if value is not None:
            return str(value)
    return None


def apply_template(workspace: Obj, template: Obj, *, creating: bool) -> None:
    """What jupyter-k8s's template resolver does to a Workspace naming a template
    (api/v1alpha1/workspacetemplate_types.go; internal/controller template resolution): on
    create, the template's defaults fill what the Workspace leaves out (image, resources, idle
    shutdown, app type, node selector, tolerations, access and ownership types); on create and
    update, the bounds are enforced: the image is the default or one of `allowedImages`, CPU,
    memory and GPUs lie within `resourceBounds`, the idle timeout within
    `idleShutdownOverrides` (or equals the default when overrides are not allowed), and no
    secondary volume when `allowSecondaryStorages` is false. A violation is refused."""
    spec = workspace.setdefault("spec", {})
    tspec = template.get("spec") or {}
    name = template["metadata"]["name"]
    if creating:
        defaults = {
            "image": tspec.get("defaultImage"),
            "resources": tspec.get("defaultResources"),
            "idleShutdown": tspec.get("defaultIdleShutdown"),
            "appType": tspec.get("appType"),
            "nodeSelector": tspec.get("defaultNodeSelector"),
            "tolerations": tspec.get("defaultTolerations"),
            "accessType": tspec.get("defaultAccessType"),
            "ownershipType": tspec.get("defaultOwnershipType"),
        }
        for key, value in defaults.items():
            if value is not None and not spec.get(key):
                spec[key] = copy.deepcopy(value)
    image = spec.get("image")
    allowed = [tspec.get("defaultImage"), *(tspec.get("allowedImages") or [])]
    if image and image not in allowed:
        raise _deny(
            f"image {image} is not allowed by template {name}; allowed: {', '.join(map(str, allowed))}"
        )
    bounds = tspec.get("resourceBounds") or {}
    resources = spec.get("resources") or {}
    for bound, resource in (("cpu", "cpu"), ("memory", "memory"), ("gpu", GPU)):
        limits = bounds.get(bound)
        value = _amount(resources, resource)
        if not limits:
            continue
        amount = parse(value) if value is not None else 0.0
        low, high = parse(limits["min"]), parse(limits["max"])
        if not low <= amount <= high:
            raise _deny(
                f"{resource} {value or 0} is outside template {name}'s bounds"
                f" [{limits['min']}, {limits['max']}]"
            )
    idle = spec.get("idleShutdown") or {}
    overrides = tspec.get("idleShutdownOverrides") or {}
    default_idle = tspec.get("defaultIdleShutdown")
    if idle and overrides.get("allow") is False and default_idle and idle != default_idle:
        raise _deny(f"template {name} does not allow overriding idle shutdown")
    minutes = idle.get("idleTimeoutInMinutes")
    if idle.get("enabled") and minutes is not None:
        least, most = overrides.get("minTimeoutMinutes"), overrides.get("maxTimeoutMinutes")
        if (least is not None and minutes < least) or (most is not None and minutes > most):
            raise _deny(
                f"idle timeout {minutes} minutes is outside template {name}'s bounds"
                f" [{least if least is not None else 1}, {most if most is not None else 'any'}]"
            )
    if tspec.get("allowSecondaryStorages") is False and spec.get("volumes"):
        raise _deny(f"template {name} does not allow secondary storage volumes")


def template_admission(server: ApiServer) -> object:
    """The jupyter-k8s webhook's template handling, for a Workspace with `templateRef`."""

    def admit(rt: Any, obj: Obj, old: Obj | None) -> None:
        if rt.key != WORKSPACES or not server.api.registry.has_crd(GROUP, "workspacetemplates"):
            return
        ref = (obj.get("spec") or {}).get("templateRef")
        if not ref:
            return
        template = server.store.get(TEMPLATES, "", str(ref.get("name")))
        if template is None:
            raise _deny(f"workspace template {ref.get('name')} not found")
        apply_template(obj, template, creating=old is None)

    return admit
