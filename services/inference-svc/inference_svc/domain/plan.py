"""What an endpoint command would do, decided from actual state: pure functions.

The workflow and the dry run call the same functions: the objects to apply are those whose
declared fields differ from the cluster's copy (a re-deploy of the same spec applies nothing and
ends `noop`); a scale or a pool reassignment is a noop when the replicas or the label already
match. Rules that need the cluster (the instance type exists there, enough GPUs per node, the
operator that serves a kind is installed) raise `PermanentError` with the field and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from inference_svc.domain.render import (
    INFERENCE_API,
    KEDA_API,
    MODEL_LABEL,
    POOL_LABEL,
    UNASSIGNED,
    KubeObject,
    PoolModel,
    pool_model,
    pool_service,
    render,
    scale_target,
)
from shared.boundary import priority_class_object, team_queue
from shared.contracts.gpu import mig_resource
from shared.contracts.inference import EndpointSpec
from shared.contracts.plan import FieldChange, Plan, PlannedObject
from shared.errors import PermanentError
from shared.validation import RuleViolation

INVALID = "InvalidEndpoint"


@dataclass(frozen=True)
class ClusterFacts:
    """What the rules and the diff are computed from."""

    cluster: str
    gpus_by_instance_type: dict[str, int]  # instance type of the HyperPod nodes -> GPUs per node
    served: frozenset[
        str
    ]  # kinds served among InferenceEndpointConfig, JumpStartModel, ScaledObject
    actual: dict[tuple[str, str], KubeObject] = field(default_factory=dict)  # (kind, name) -> obj
    # Objects an earlier deploy of the endpoint made that exist still: {api_version, kind, name}.
    recorded: list[dict[str, str]] = field(default_factory=list)
    # instance type -> the most nvidia.com/mig-<profile> one of its nodes advertises
    partitions_by_instance_type: dict[str, dict[str, int]] = field(default_factory=dict)
    # instance type -> (HAMi devices of one node, MiB of its smallest device); absent: no HAMi
    hami_by_instance_type: dict[str, tuple[int, int]] = field(default_factory=dict)
    # with a team: whether task governance made its LocalQueue and the priority class's
    # WorkloadPriorityClass (None: not asked)
    team_queue: bool | None = None
    priority_class: bool | None = None


def rule(field_name: str, message: str, hint: str) -> PermanentError:
    """A refusal the gateway answers as 422 on `field_name` (the message starts with it)."""
    return PermanentError(INVALID, f"{field_name}: {message}", hint)


def checked_pool_model(spec: EndpointSpec, model: str) -> PoolModel:
    """`pool_model`: its refusal a rule on `model` (a 422 on that field at the edge)."""
    try:
        return pool_model(spec, model)
    except RuleViolation as exc:
        raise rule("model", str(exc), exc.hint) from exc


def _fraction_checked(
    spec: EndpointSpec, facts: ClusterFacts, instance_type: str, where: str
) -> bool:
    """MIG partitions and HAMi shares against the nodes of `instance_type`; True when the
    endpoint asks for them (and so they, not whole GPUs, were checked)."""
    gpus = spec.gpus or 0
    if spec.mig_profile is not None:
        resource = mig_resource(spec.mig_profile)
        offered = facts.partitions_by_instance_type.get(instance_type, {})
        have = offered.get(resource, 0)
        if have == 0:
            listed = ", ".join(sorted(offered)) or "none (whole GPUs)"
            raise rule(
                "mig_profile" if where == "instance_type" else where,
                f"no {instance_type} node of cluster {facts.cluster} advertises {resource}"
                f" (their MIG partitions: {listed})",
                f"partition an instance group of {instance_type} into {spec.mig_profile}"
                " (its mig_profile), or request a partition its nodes have",
            )
        if gpus > have:
            raise rule(
                "gpus",
                f"{gpus} {resource} per replica exceed the {have} of one {instance_type} node",
                f"set gpus to at most {have}",
            )
        return True
    if spec.gpu_memory_mib is None and spec.gpu_cores is None:
        return False
    devices, memory = facts.hami_by_instance_type.get(instance_type, (0, 0))
    if devices == 0:
        raise rule(
            "gpu_memory_mib" if spec.gpu_memory_mib is not None else "gpu_cores",
            f"HAMi does not share the GPUs of the {instance_type} nodes of {facts.cluster}",
            "install HAMi (its device plugin runs on nodes labelled gpu=on), or request whole"
            " GPUs (drop gpu_memory_mib and gpu_cores)",
        )
    if gpus > devices:
        raise rule(
            "gpus",
            f"{gpus} virtual GPUs need {gpus} distinct GPUs, but a {instance_type} node has"
            f" {devices}",
            f"set gpus to at most {devices}",
        )
    if (spec.gpu_memory_mib or 0) > memory:
        raise rule(
            "gpu_memory_mib",
            f"{spec.gpu_memory_mib} MiB per virtual GPU, but a GPU of {instance_type} has"
            f" {memory} MiB",
            f"set gpu_memory_mib to at most {memory}",
        )
    return True


def check_governance(spec: EndpointSpec, facts: ClusterFacts) -> None:
    """A team's endpoint needs the team's LocalQueue and its priority class to exist."""
    if spec.team is None:
        return
    if facts.team_queue is False:
        raise rule(
            "team",
            f"team {spec.team!r} does not exist on cluster {facts.cluster} (no LocalQueue"
            f" {team_queue(spec.team)})",
            "use one of the cluster's teams (GET /api/v1/clusters/{name}/teams), or create the"
            " team first (POST /api/v1/clusters/{name}/teams)",
        )
    if spec.priority is not None and facts.priority_class is False:
        raise rule(
            "priority",
            f"priority class {spec.priority!r} does not exist on cluster {facts.cluster} (no"
            f" WorkloadPriorityClass {priority_class_object(spec.priority)})",
            "use one of the priority classes GET /api/v1/clusters/{name}/teams lists",
        )


def check_deploy(spec: EndpointSpec, facts: ClusterFacts) -> None:
    check_governance(spec, facts)
    types = facts.gpus_by_instance_type
    offered = ", ".join(sorted(types)) or "no HyperPod node yet"
    for index, instance_type in enumerate(spec.instance_types()):
        where = "instance_type" if index == 0 else f"fallback_instance_types.{index - 1}"
        if instance_type not in types:
            raise rule(
                where,
                f"{instance_type} is not an instance type of cluster {facts.cluster} ({offered})",
                f"use one of: {offered}; or add an instance group of {instance_type} first",
            )
        per_node = types[instance_type]
        if _fraction_checked(spec, facts, instance_type, where):
            continue
        if spec.gpus is not None and spec.gpus > per_node:
            raise rule(
                "gpus" if index == 0 else where,
                f"{spec.gpus} GPUs per replica exceed the {per_node} of one {instance_type} node",
                f"set gpus to at most {per_node}, or choose an instance type with more GPUs",
            )
    pd = spec.managed.disaggregation if spec.managed else None
    for role, part in (("prefill", pd.prefill), ("decode", pd.decode)) if pd else ():
        fewest = min(types[t] for t in spec.instance_types())
        if part.gpus is not None and part.gpus > fewest:
            raise rule(
                f"managed.disaggregation.{role}.gpus",
                f"{part.gpus} GPUs per {role} worker exceed the {fewest} of one node",
                f"set it to at most {fewest}, or choose an instance type with more GPUs",
            )
    if spec.kind in ("managed", "jumpstart"):
        kind = "InferenceEndpointConfig" if spec.kind == "managed" else "JumpStartModel"
        if kind not in facts.served:
            raise rule(
                "kind",
                f"the HyperPod inference operator is not installed on {facts.cluster}",
                f"enable it first: PATCH /api/v1/clusters/{facts.cluster}/features "
                '{"inference_operator": true}',
            )
    if spec.autoscaling is not None and "ScaledObject" not in facts.served:
        raise rule(
            "autoscaling",
            f"KEDA is not installed on {facts.cluster}",
            f"reconcile the cluster's dependencies (POST /api/v1/clusters/{facts.cluster}/"
            "dependencies/reconcile), or drop autoscaling",
        )


def differences(actual: Any, desired: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """The declared fields whose actual value differs (fields the server adds are ignored)."""
    if isinstance(desired, dict):
        if not isinstance(actual, dict):
            return [(path, actual, desired)]
        found: list[tuple[str, Any, Any]] = []
        for key, value in desired.items():
            found += differences(actual.get(key), value, f"{path}.{key}" if path else key)
        return found
    if isinstance(desired, list):
        if not isinstance(actual, list) or len(actual) != len(desired):
            return [(path, actual, desired)]
        found = []
        for index, (a, d) in enumerate(zip(actual, desired, strict=True)):
            found += differences(a, d, f"{path}[{index}]")
        return found
    if actual != desired and str(actual) != str(desired):
        return [(path, actual, desired)]
    return []


def _planned(
    obj: KubeObject, action: Literal["apply", "delete", "patch"] = "apply"
) -> PlannedObject:
    return PlannedObject(
        action=action,
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        name=obj["metadata"]["name"],
        namespace=obj["metadata"].get("namespace"),
        body=obj if action != "delete" else None,
    )


def wanted_objects(spec: EndpointSpec) -> list[KubeObject]:
    return render(spec)


def deploy_plan(spec: EndpointSpec, facts: ClusterFacts) -> Plan:
    check_deploy(spec, facts)
    plan = Plan(
        command="DeployEndpoint", target=f"{facts.cluster}/endpoints/{spec.name}", noop=True
    )
    for obj in wanted_objects(spec):
        key = (obj["kind"], obj["metadata"]["name"])
        actual = facts.actual.get(key)
        if actual is None:
            plan.objects.append(_planned(obj))
            plan.diff[f"{key[0]}/{key[1]}"] = FieldChange(actual=None, requested="create")
            continue
        changed = differences(actual, obj)
        if obj["kind"] == "Deployment" and any(
            w.startswith("spec.selector") for w, _, _ in changed
        ):
            raise rule(
                "service",
                f"the workers of {spec.name} would need a new selector, which Kubernetes does "
                "not change in place",
                f"delete the endpoint first (DELETE /api/v1/endpoints/{spec.name}), or deploy "
                "this shape under another name",
            )
        if changed:
            plan.objects.append(_planned(obj))
            for where, was, wanted in changed[:20]:
                plan.diff[f"{key[0]}/{key[1]}.{where}"] = FieldChange(actual=was, requested=wanted)
    wanted = {(o["kind"], o["metadata"]["name"]) for o in wanted_objects(spec)}
    for old in facts.recorded:
        if (old["kind"], old["name"]) in wanted:
            continue
        plan.objects.append(
            PlannedObject(
                action="delete",
                api_version=old["api_version"],
                kind=old["kind"],
                name=old["name"],
                namespace=spec.namespace,
            )
        )
        plan.diff[f"{old['kind']}/{old['name']}"] = FieldChange(
            actual="present", requested="deleted"
        )
    plan.noop = not plan.objects
    if plan.noop:
        plan.notes.append("every object of the endpoint already matches its spec")
    if spec.kind in ("managed", "jumpstart"):
        plan.notes.append("the HyperPod inference operator deploys the workers and their Service")
    if spec.autoscaling is not None and spec.autoscaling.gpu_utilization is not None:
        plan.notes.append(
            "the gpu-utilization trigger reads DCGM_FI_DEV_GPU_UTIL from Prometheus: the DCGM "
            "exporter of the observability add-on must be scraped there, else it reads nothing"
        )
    return plan


def current_replicas(spec: EndpointSpec, obj: KubeObject | None) -> int | None:
    if obj is None:
        return None
    value = (obj.get("spec") or {}).get("replicas")
    return int(value) if value is not None else None


def scale_plan(spec: EndpointSpec, cluster: str, actual: KubeObject | None, replicas: int) -> Plan:
    api_version, kind, name = scale_target(spec)
    if spec.autoscaling is not None:
        raise rule(
            "replicas",
            f"KEDA scales {spec.name} between {spec.autoscaling.min_replicas} and "
            f"{spec.autoscaling.max_replicas} replicas",
            "change the endpoint's autoscaling bounds instead of its replicas",
        )
    if spec.service == "model_pool" and replicas == 0:
        raise rule("replicas", "a model pool keeps at least one warm worker", "send replicas >= 1")
    if actual is None:
        raise PermanentError(
            "EndpointNotFound",
            f"{kind} {name} of endpoint {spec.name} is not on cluster {cluster}",
            "deploy the endpoint again (POST /api/v1/endpoints)",
        )
    was = current_replicas(spec, actual)
    plan = Plan(
        command="ScaleEndpoint", target=f"{cluster}/endpoints/{spec.name}", noop=was == replicas
    )
    if not plan.noop:
        plan.diff["replicas"] = FieldChange(actual=was, requested=replicas)
        plan.objects.append(
            PlannedObject(
                action="patch",
                api_version=api_version,
                kind=kind,
                name=name,
                namespace=spec.namespace,
                body={"spec": {"replicas": replicas}},
            )
        )
    return plan


def assign_plan(
    spec: EndpointSpec,
    cluster: str,
    pod: KubeObject | None,
    model: str | None,
    service_exists: bool,
) -> Plan:
    if spec.service != "model_pool":
        raise rule(
            "name",
            f"endpoint {spec.name} is not a model pool",
            "deploy an endpoint with service model_pool to reassign workers",
        )
    labels = ((pod or {}).get("metadata") or {}).get("labels") or {}
    if pod is None or labels.get(POOL_LABEL) != spec.name:
        pod_name = ((pod or {}).get("metadata") or {}).get("name", "the pod")
        raise rule(
            "pod",
            f"{pod_name} is not a worker of pool {spec.name}",
            f"GET /api/v1/endpoints/{spec.name}?cluster={cluster} lists the pool's workers",
        )
    wanted = checked_pool_model(spec, model).label if model is not None else UNASSIGNED
    was = labels.get(MODEL_LABEL, UNASSIGNED)
    name = pod["metadata"]["name"]
    plan = Plan(
        command="AssignPoolWorker", target=f"{cluster}/endpoints/{spec.name}/{name}", noop=True
    )
    if was != wanted:
        plan.diff[f"pod/{name}.labels.{MODEL_LABEL}"] = FieldChange(actual=was, requested=wanted)
        plan.objects.append(
            PlannedObject(
                action="patch",
                api_version="v1",
                kind="Pod",
                name=name,
                namespace=spec.namespace,
                body={"metadata": {"labels": {MODEL_LABEL: wanted}}},
            )
        )
    if model is not None and not service_exists:
        service = pool_service(spec, model)
        plan.diff[f"Service/{service['metadata']['name']}"] = FieldChange(
            actual=None, requested="create"
        )
        plan.objects.append(_planned(service))
    plan.noop = not plan.objects
    if not plan.noop:
        plan.notes.append("the worker keeps running: only its label changes, no restart")
    return plan


def delete_plan(spec: EndpointSpec, cluster: str, present: list[KubeObject]) -> Plan:
    plan = Plan(
        command="DeleteEndpoint", target=f"{cluster}/endpoints/{spec.name}", noop=not present
    )
    for obj in reversed(present):
        plan.objects.append(_planned(obj, "delete"))
        plan.diff[f"{obj['kind']}/{obj['metadata']['name']}"] = FieldChange(
            actual="present", requested="deleted"
        )
    return plan


def served_kinds() -> tuple[tuple[str, str], ...]:
    return (
        (INFERENCE_API, "InferenceEndpointConfig"),
        (INFERENCE_API, "JumpStartModel"),
        (KEDA_API, "ScaledObject"),
    )
