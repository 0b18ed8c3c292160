"""Spaces as the SageMaker Spaces add-on takes them: the Workspace object a space spec becomes
(the fields `hyp create hyp-space` writes: displayName, image, desiredStatus, ownershipType,
accessType, resources, volumes, idleShutdown, appType), a change applied to one, what a space
reads as, and the plans. Pure: no I/O."""

from __future__ import annotations

from typing import Any

from shared.contracts.plan import FieldChange, Plan, PlannedObject
from shared.contracts.spaces import (
    APP_IMAGES,
    GPU_IMAGE,
    SPACE_NAMESPACE,
    SPACE_PORT,
    IdleShutdown,
    SpaceChange,
    SpaceSpec,
    SpaceVolume,
)
from shared.errors import PermanentError

KubeObject = dict[str, Any]
API_VERSION = "workspace.jupyter.org/v1alpha1"
KIND = "Workspace"
CREATED_BY = "workspace.jupyter.org/created-by"
NAME_LABEL = "workspace.jupyter.org/workspace-name"
MANAGED_LABEL = "hyperpilot.dev/space"
GPU = "nvidia.com/gpu"


def _resources(cpu: str | None, memory: str | None, gpu: int) -> KubeObject:
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
        limits["memory"] = memory
    if gpu:
        requests[GPU] = str(gpu)
        limits[GPU] = str(gpu)
    out: KubeObject = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def _volumes(volumes: list[SpaceVolume]) -> list[KubeObject]:
    return [
        {
            "name": v.claim[:63].rstrip("-."),
            "mountPath": v.path(),
            "persistentVolumeClaimName": v.claim,
        }
        for v in volumes
    ]


def _idle(idle: IdleShutdown | None) -> KubeObject | None:
    if idle is None:
        return None
    return {
        "enabled": idle.enabled,
        "idleTimeoutInMinutes": idle.timeout_minutes,
        "detection": {"httpGet": {"path": "/api/idle", "port": SPACE_PORT}},
    }


def workspace(spec: SpaceSpec, owner: str) -> KubeObject:
    """The Workspace a new space is: Running, OwnerOnly for both changes and connections.
    With a template (`templateRef`), only what the request sent is written: the operator fills
    the rest from the template's defaults and enforces its bounds."""
    sent = spec.model_fields_set
    body: KubeObject = {
        "displayName": spec.display_name or spec.name,
        "desiredStatus": "Running",
        "ownershipType": "OwnerOnly",
        "accessType": "OwnerOnly",
        "volumes": _volumes(spec.volumes),
    }
    if spec.template is None:
        body["image"] = spec.image or (GPU_IMAGE if spec.gpu else APP_IMAGES[spec.app_type])
        body["appType"] = spec.app_type
        body["resources"] = _resources(spec.cpu, spec.memory, spec.gpu or 0)
    else:
        body["templateRef"] = {"name": spec.template}
        if spec.image:
            body["image"] = spec.image
        if "app_type" in sent:
            body["appType"] = spec.app_type
        if spec.cpu is not None or spec.memory is not None or spec.gpu is not None:
            body["resources"] = _resources(spec.cpu, spec.memory, spec.gpu or 0)
    idle = _idle(spec.idle_shutdown)
    if idle is not None:
        body["idleShutdown"] = idle
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": spec.name,
            "namespace": SPACE_NAMESPACE,
            "labels": {MANAGED_LABEL: "true"},
            "annotations": {CREATED_BY: owner},
        },
        "spec": body,
    }


def _gpu_of(resources: KubeObject) -> int:
    value = (resources.get("limits") or {}).get(GPU) or (resources.get("requests") or {}).get(GPU)
    try:
        return int(str(value)) if value is not None else 0
    except ValueError:
        return 0


def settings(found: KubeObject) -> dict[str, Any]:
    """A Workspace's settings in the contract's terms (what a change is compared against)."""
    spec = found.get("spec") or {}
    resources = spec.get("resources") or {}
    requests = resources.get("requests") or {}
    idle = spec.get("idleShutdown")
    return {
        "image": spec.get("image"),
        "cpu": requests.get("cpu"),
        "memory": requests.get("memory") or (resources.get("limits") or {}).get("memory"),
        "gpu": _gpu_of(resources),
        "volumes": [
            {"claim": v.get("persistentVolumeClaimName"), "mount_path": v.get("mountPath")}
            for v in spec.get("volumes") or []
        ],
        "idle_shutdown": None
        if not idle
        else {
            "enabled": bool(idle.get("enabled")),
            "timeout_minutes": idle.get("idleTimeoutInMinutes"),
        },
    }


def change_diff(found: KubeObject, change: SpaceChange) -> dict[str, FieldChange]:
    """Only the requested fields whose actual value differs."""
    now = settings(found)
    wanted = change.model_dump(mode="json", exclude_none=True)
    if change.volumes is not None:
        wanted["volumes"] = [{"claim": v.claim, "mount_path": v.path()} for v in change.volumes]
    return {
        key: FieldChange(actual=now.get(key), requested=value)
        for key, value in wanted.items()
        if now.get(key) != value
    }


OWN_FIELDS = (
    "displayName",
    "image",
    "desiredStatus",
    "ownershipType",
    "accessType",
    "appType",
    "resources",
    "volumes",
    "idleShutdown",
    "templateRef",  # kept: a re-apply without it would unbind the space from its template
)


def changed_workspace(found: KubeObject, change: SpaceChange) -> KubeObject:
    """The Workspace with the change applied: every field Hyperpilot sets, since a server-side
    apply removes the fields its manager set before and leaves out now."""
    now = settings(found)
    cpu = change.cpu if change.cpu is not None else now["cpu"]
    memory = change.memory if change.memory is not None else now["memory"]
    gpu = change.gpu if change.gpu is not None else int(now["gpu"])
    spec: KubeObject = {"resources": _resources(cpu, memory, gpu)}
    if change.image is not None:
        spec["image"] = change.image
    if change.volumes is not None:
        spec["volumes"] = _volumes(change.volumes)
    if change.idle_shutdown is not None:
        spec["idleShutdown"] = _idle(change.idle_shutdown)
    return _applied(found, spec)


def status_workspace(found: KubeObject, desired: str) -> KubeObject:
    return _applied(found, {"desiredStatus": desired})


def _applied(found: KubeObject, changes: KubeObject) -> KubeObject:
    """What to apply: the Workspace's own metadata and fields, with `changes` over them."""
    meta = found["metadata"]
    spec = found.get("spec") or {}
    body = {k: spec[k] for k in OWN_FIELDS if k in spec}
    body.update(changes)
    body.setdefault("displayName", meta["name"])
    metadata: KubeObject = {
        "name": meta["name"],
        "namespace": meta.get("namespace") or SPACE_NAMESPACE,
        "labels": {MANAGED_LABEL: "true"},
    }
    owner = owner_of(found)
    if owner:
        metadata["annotations"] = {CREATED_BY: owner}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": body}


def owner_of(found: KubeObject) -> str | None:
    owner = ((found.get("metadata") or {}).get("annotations") or {}).get(CREATED_BY)
    return str(owner) if owner else None


def phase(found: KubeObject) -> str:
    """Running, Starting, Stopping, Stopped or Failed, from desiredStatus and the conditions."""
    conditions = {
        c.get("type"): c.get("status") for c in (found.get("status") or {}).get("conditions") or []
    }
    desired = (found.get("spec") or {}).get("desiredStatus", "Running")
    if conditions.get("Degraded") == "True":
        return "Failed"
    if desired == "Stopped":
        return "Stopped" if conditions.get("Stopped") == "True" else "Stopping"
    return "Running" if conditions.get("Available") == "True" else "Starting"


def status_reason(found: KubeObject) -> str | None:
    """Why a stopped space stopped, when the operator says (its Stopped condition's message:
    an idle shutdown names its timeout); None otherwise."""
    for c in (found.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Stopped" and c.get("status") == "True" and c.get("message"):
            return f"{c.get('reason') or 'Stopped'}: {c['message']}"
    return None


def port_forward_command(cluster: str, name: str) -> str:
    """What a local IDE connects through: the space's Service forwarded to localhost."""
    return (
        f"kubectl --context {cluster} -n {SPACE_NAMESPACE} port-forward "
        f"service/{name} {SPACE_PORT}:{SPACE_PORT}"
    )


def view(cluster: str, found: KubeObject) -> dict[str, Any]:
    """A space as every face shows it."""
    meta = found["metadata"]
    spec = found.get("spec") or {}
    status = found.get("status") or {}
    name = str(meta["name"])
    return {
        "name": name,
        "cluster": cluster,
        "display_name": spec.get("displayName"),
        "app_type": spec.get("appType"),
        "owner": owner_of(found),
        "status": phase(found),
        "status_reason": status_reason(found),
        "desired_status": spec.get("desiredStatus", "Running"),
        **settings(found),
        "created_at": meta.get("creationTimestamp"),
        "url": f"/api/v1/clusters/{cluster}/spaces/{name}/lab/",
        "service": status.get("serviceName"),
        "port_forward": port_forward_command(cluster, name),
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message")}
            for c in status.get("conditions") or []
        ],
    }


def missing(cluster: str, name: str) -> PermanentError:
    return PermanentError(
        "SpaceNotFound",
        f"space {name} is not on cluster {cluster}",
        "GET /api/v1/clusters/{name}/spaces lists the spaces",
    )


def plan_create(
    cluster: str,
    spec: SpaceSpec,
    owner: str,
    *,
    served: bool,
    existing: KubeObject | None,
    missing_claims: list[str],
    gpu_nodes: int,
) -> Plan:
    """The dry run of a create; a rule the cluster's actual state breaks is refused, naming
    the field."""
    if not served:
        raise PermanentError(
            "OperatorMissing",
            f"cluster {cluster} does not serve {API_VERSION} Workspace: the Spaces add-on is off",
            'enable it first: PATCH /api/v1/clusters/{name}/features {"spaces": true}',
        )
    if existing is not None:
        raise PermanentError(
            "SpaceExists",
            f"space {spec.name} already exists on cluster {cluster}",
            "pick another name, or delete that space first",
        )
    if missing_claims:
        raise PermanentError(
            "InvalidSpace",
            f"volumes: claim {missing_claims[0]} is not one of the cluster's storage claims",
            "GET /api/v1/clusters/{name}/storage lists them; the default bucket's is s3-claim",
        )
    if spec.gpu and gpu_nodes == 0:
        raise PermanentError(
            "InvalidSpace",
            f"gpu: cluster {cluster} has no node with {spec.gpu} free-standing GPU(s)",
            "set gpu to 0, or add an instance group with GPUs",
        )
    body = workspace(spec, owner)
    return Plan(
        command="CreateSpace",
        target=f"{cluster}/{spec.name}",
        noop=False,
        diff={},
        calls=[],
        objects=[
            PlannedObject(
                action="apply",
                api_version=API_VERSION,
                kind=KIND,
                name=spec.name,
                namespace=SPACE_NAMESPACE,
                body=body,
            )
        ],
        notes=["the space is OwnerOnly: only its creator opens or changes it"],
    )


def plan_patch(
    cluster: str, name: str, command: str, diff: dict[str, FieldChange], body: KubeObject
) -> Plan:
    return Plan(
        command=command,
        target=f"{cluster}/{name}",
        noop=not diff,
        diff=diff,
        calls=[],
        objects=[]
        if not diff
        else [
            PlannedObject(
                action="apply",
                api_version=API_VERSION,
                kind=KIND,
                name=name,
                namespace=SPACE_NAMESPACE,
                body=body,
            )
        ],
        notes=[],
    )


TEMPLATE_KIND = "WorkspaceTemplate"

# What a template refusal of the operator's webhook is about, by the words it uses
# (jupyter-k8s's template resolver: image, resource bounds, idle shutdown overrides, secondary
# storage, the template itself), and the request field that sets it.
_TEMPLATE_RULES = (
    ("template ", "not found", "template"),
    ("image ", "not allowed", "image"),
    ("cpu ", "bounds", "cpu"),
    ("memory ", "bounds", "memory"),
    (f"{GPU} ", "bounds", "gpu"),
    ("idle ", "", "idle_shutdown"),
    ("secondary storage", "", "volumes"),
)


def template_refusal(template: str, message: str) -> PermanentError:
    """The API server's dry run refused a space naming `template` (the operator's webhook
    enforces the template's bounds): the refusal as a rule broken on the request's field, with
    where to read the bounds."""
    reason = message.rpartition("denied the request: ")[2] or message
    field = next(
        (f for start, words, f in _TEMPLATE_RULES if start in reason and words in reason),
        "template",
    )
    return PermanentError(
        "InvalidSpace",
        f"{field}: {reason}",
        f"GET /api/v1/clusters/{{name}}/space-templates lists template {template}'s defaults"
        " and bounds; ask within them, or name another template",
    )


def _bound(bounds: KubeObject, name: str) -> dict[str, str] | None:
    found = bounds.get(name) or {}
    return {"min": str(found["min"]), "max": str(found["max"])} if found else None


def template_view(found: KubeObject) -> dict[str, Any]:
    """A WorkspaceTemplate as every face shows it: its defaults and the bounds it enforces."""
    spec = found.get("spec") or {}
    resources = spec.get("defaultResources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    bounds = spec.get("resourceBounds") or {}
    idle = spec.get("defaultIdleShutdown") or {}
    overrides = spec.get("idleShutdownOverrides") or {}
    return {
        "name": found["metadata"]["name"],
        "display_name": spec.get("displayName"),
        "description": spec.get("description"),
        "app_type": spec.get("appType"),
        "default_image": spec.get("defaultImage"),
        "allowed_images": list(spec.get("allowedImages") or []),
        "defaults": {
            "cpu": requests.get("cpu") or limits.get("cpu"),
            "memory": requests.get("memory") or limits.get("memory"),
            "gpu": _gpu_of(resources),
            "idle_timeout_minutes": idle.get("idleTimeoutInMinutes")
            if idle.get("enabled")
            else None,
        },
        "bounds": {
            "cpu": _bound(bounds, "cpu"),
            "memory": _bound(bounds, "memory"),
            "gpu": _bound(bounds, "gpu"),
            "idle_timeout_minutes": {
                "min": overrides.get("minTimeoutMinutes"),
                "max": overrides.get("maxTimeoutMinutes"),
            }
            if overrides
            else None,
        },
        "secondary_volumes": spec.get("allowSecondaryStorages") is not False,
    }
