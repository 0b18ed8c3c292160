"""The rules that need actual state, and the plan of a submit (pure).

The planner (dry run) and the workflow's first stage call the same `plan_submit` with the same
facts read from the cluster, so a dry run says exactly what the submit will do or refuse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.boundary import priority_class_object, team_namespace, team_queue
from shared.contracts.gpu import mig_resource
from shared.contracts.plan import FieldChange, Plan, PlannedObject
from shared.contracts.workloads import (
    NAMESPACE,
    S3_CLAIM,
    JobBase,
    ModelDownloadSpec,
    Resources,
)
from shared.errors import PermanentError
from workload_svc.domain.elastic_rules import HyperPodFacts, check_elastic
from workload_svc.domain.render import (
    HPJ_KIND,
    RAY_KIND,
    Rendered,
    download_job,
    nproc,
    render,
)
from workload_svc.domain.secret_refs import SYNCED_KEY, kube_secrets, synced

KubeObject = dict[str, Any]

# Refusals that depend on the cluster's current state rather than on the request (409).
CONFLICT_CODES = frozenset({"JobExists", "OperatorMissing"})


@dataclass(frozen=True)
class GroupFacts:
    name: str
    instance_type: str | None
    nodes: int  # HyperPod nodes of the group registered in Kubernetes
    gpus_per_node: int | None  # allocatable nvidia.com/gpu on the group's nodes (None: no node)
    efa_per_node: int | None
    # allocatable nvidia.com/mig-<profile> on each of the group's nodes (the fewest)
    partitions: dict[str, int] = field(default_factory=dict)
    # HAMi's registered devices per node and the memory (MiB) of the smallest (0: no HAMi)
    hami_devices: int = 0
    hami_memory_mib: int = 0


@dataclass(frozen=True)
class ClusterFacts:
    groups: dict[str, GroupFacts]
    storage: bool  # the shared bucket's claim exists
    kinds: frozenset[str]  # custom kinds the API server serves
    existing: KubeObject | None = None  # the object of the same name, if any
    notes: list[str] = field(default_factory=list)
    # the Kubernetes Secrets the spec's secret_env names that the jobs' namespace lacks
    missing_secrets: frozenset[str] = frozenset()
    # the HyperPod cluster's description, read for elastic jobs (None: not read)
    hyperpod: HyperPodFacts | None = None
    # where the job runs, and (with a team) whether task governance made the team's LocalQueue
    # and the priority class's WorkloadPriorityClass (None: not asked)
    namespace: str = NAMESPACE
    team_queue: bool | None = None
    priority_class: bool | None = None
    # whether HAMi's device plugin DaemonSet (kube-system/hami-device-plugin) exists (None:
    # not read)
    hami_installed: bool | None = None


def violation(field_name: str, message: str, hint: str) -> PermanentError:
    """A refused request: the message starts with the field (the gateway answers 422)."""
    return PermanentError("InvalidJob", f"{field_name}: {message}", hint)


def check_fractions(group: str, facts_of: GroupFacts, resources: Resources) -> bool:
    """The rules of MIG partitions and HAMi shares against the group's nodes; True when the
    request is fractional (and so checked here, not as whole GPUs)."""
    gpus = resources.gpus
    label = facts_of.instance_type or "its instance type"
    if resources.mig_profile is not None:
        resource = mig_resource(resources.mig_profile)
        have = facts_of.partitions.get(resource, 0)
        if have == 0:
            offered = ", ".join(sorted(facts_of.partitions)) or "none (whole GPUs)"
            raise violation(
                "resources.mig_profile",
                f"the nodes of group {group} ({label}) advertise no {resource}"
                f" (their MIG partitions: {offered})",
                f"use a group partitioned into {resources.mig_profile} (instance group"
                " mig_profile), or request one of the partitions it has",
            )
        if gpus > have:
            raise violation(
                "resources.gpus",
                f"{gpus} {resource} per pod, but a node of group {group} has {have}",
                f"request at most {have} partitions per pod, or use more replicas",
            )
        return True
    if resources.gpu_memory_mib is None and resources.gpu_cores is None:
        return False
    if facts_of.hami_devices == 0:
        raise violation(
            "resources.gpu_memory_mib"
            if resources.gpu_memory_mib is not None
            else "resources.gpu_cores",
            f"HAMi does not share the GPUs of group {group}: its nodes register no HAMi device",
            "install HAMi (its device plugin runs on nodes labelled gpu=on: set that label on"
            " the group), or request whole GPUs (drop gpu_memory_mib and gpu_cores)",
        )
    if gpus > facts_of.hami_devices:
        raise violation(
            "resources.gpus",
            f"{gpus} virtual GPUs per pod need {gpus} distinct GPUs, but a node of group {group}"
            f" has {facts_of.hami_devices}",
            f"request at most {facts_of.hami_devices} virtual GPUs per pod",
        )
    if (resources.gpu_memory_mib or 0) > facts_of.hami_memory_mib:
        raise violation(
            "resources.gpu_memory_mib",
            f"{resources.gpu_memory_mib} MiB per virtual GPU, but a GPU of group {group} has"
            f" {facts_of.hami_memory_mib} MiB",
            f"request at most {facts_of.hami_memory_mib} MiB",
        )
    return True


def check_hami_installed(facts: ClusterFacts, resources: Resources | None) -> None:
    """A HAMi share (gpu_memory_mib, gpu_cores) on a cluster without HAMi is refused with the
    way to install it."""
    if resources is None or facts.hami_installed is not False:
        return
    for name, value in (
        ("gpu_memory_mib", resources.gpu_memory_mib),
        ("gpu_cores", resources.gpu_cores),
    ):
        if value is not None:
            raise violation(
                f"resources.{name}",
                "HAMi is not installed on this cluster, so no GPU is shared by memory or cores",
                'turn HAMi on (PATCH /api/v1/clusters/{name}/features {"hami": true}, or'
                " hyperpilot features set --hami) and label the group gpu=on; or request"
                " whole GPUs, or a MIG partition (mig_profile)",
            )


def check_placement(
    group: str | None,
    gpus: int,
    efa: int,
    replicas: int,
    facts: ClusterFacts,
    resources: Resources | None = None,
) -> list[str]:
    notes: list[str] = []
    if not facts.storage:
        raise violation(
            "storage",
            f"the shared bucket's claim {S3_CLAIM} is missing in namespace {facts.namespace}",
            "create the cluster with Hyperpilot (it binds the bucket), or create the"
            " PersistentVolume and the claim s3-claim for the Mountpoint S3 CSI driver",
        )
    check_hami_installed(facts, resources)
    if group is None:
        return notes
    facts_of = facts.groups.get(group)
    if facts_of is None:
        known = ", ".join(sorted(facts.groups)) or "none"
        raise violation(
            "instance_group",
            f"the cluster has no instance group {group!r} (groups: {known})",
            "use one of the cluster's groups, or add the group first"
            " (POST /api/v1/clusters/{name}/instance-groups)",
        )
    label = f"{facts_of.instance_type or 'its instance type'}"
    fractional = resources is not None and (
        resources.mig_profile is not None
        or resources.gpu_memory_mib is not None
        or resources.gpu_cores is not None
    )
    if fractional and facts_of.nodes == 0:
        notes.append(
            f"group {group} has no registered node: its MIG partitions or HAMi devices are"
            " not known yet, the request is not checked against them"
        )
    elif not (resources is not None and check_fractions(group, facts_of, resources)):
        if facts_of.gpus_per_node is None:
            notes.append(
                f"group {group} has no registered node and {label} is not a known type:"
                " GPU counts not checked"
            )
            return notes
        if gpus and facts_of.gpus_per_node == 0 and facts_of.partitions:
            offered = ", ".join(sorted(facts_of.partitions))
            raise violation(
                "resources.gpus",
                f"the GPUs of group {group} are partitioned ({offered}): no whole GPU is left",
                "request partitions (resources.mig_profile, with gpus counting them), or use a"
                " group of whole GPUs",
            )
        if gpus > facts_of.gpus_per_node:
            raise violation(
                "resources.gpus",
                f"{gpus} GPUs per pod, but {label} in group {group} has {facts_of.gpus_per_node}",
                f"request at most {facts_of.gpus_per_node} GPUs per pod, or use more replicas",
            )
    if efa and efa > (facts_of.efa_per_node or 0):
        raise violation(
            "resources.efa",
            f"{efa} EFA interfaces per pod, but {label} in group {group} has"
            f" {facts_of.efa_per_node or 0}",
            "request at most the instance type's EFA interfaces (0 for none)",
        )
    if facts_of.nodes == 0:
        notes.append(f"group {group} has no node now: the pods wait until it scales up")
    elif replicas > facts_of.nodes:
        raise violation(
            "replicas",
            f"{replicas} pods of one node each, but group {group} has {facts_of.nodes} node(s)",
            f"use at most {facts_of.nodes} replicas, or scale the group up first",
        )
    return notes


def _declared(obj: KubeObject | None) -> Any:
    return None if obj is None else obj.get("spec")


def _same_spec(wanted: KubeObject, existing: KubeObject) -> bool:
    """Does the existing object carry everything we declare (defaults the server added aside)?"""

    def covers(want: Any, have: Any) -> bool:
        if isinstance(want, dict):
            return isinstance(have, dict) and all(covers(v, have.get(k)) for k, v in want.items())
        if isinstance(want, list):
            return (
                isinstance(have, list)
                and len(want) == len(have)
                and all(covers(w, h) for w, h in zip(want, have, strict=True))
            )
        return bool(want == have or str(want) == str(have))

    return covers(wanted.get("spec"), existing.get("spec"))


def _object_plan(
    command: str, target: str, rendered: Rendered, facts: ClusterFacts, notes: list[str]
) -> Plan:
    kind = rendered.kind
    if kind in (HPJ_KIND, RAY_KIND) and kind not in facts.kinds:
        raise PermanentError(
            "OperatorMissing",
            f"the cluster does not serve {kind} (its operator is not installed)",
            "enable the training operator (PATCH /api/v1/clusters/{name}/features) or"
            " reconcile the cluster's dependencies"
            if kind == HPJ_KIND
            else "install the KubeRay operator (the cluster's dependency stage installs it)",
        )
    meta = rendered.body["metadata"]
    if facts.existing is not None:
        if _same_spec(rendered.body, facts.existing):
            return Plan(
                command=command,
                target=target,
                noop=True,
                notes=[*notes, f"{kind} {meta['name']} already runs this spec"],
            )
        raise PermanentError(
            "JobExists",
            f"{kind} {meta['name']} already exists with another spec",
            "a job's spec does not change once submitted: pick another name, or delete the"
            " job first (DELETE /api/v1/clusters/{name}/jobs/{job})",
        )
    return Plan(
        command=command,
        target=target,
        noop=False,
        diff={"job": FieldChange(actual=None, requested=meta["name"])},
        objects=[
            PlannedObject(
                action="apply",
                api_version=rendered.api_version,
                kind=kind,
                name=meta["name"],
                namespace=meta.get("namespace"),
                body=rendered.body,
            )
        ],
        notes=notes,
    )


def check_governance(team: str | None, priority: str | None, facts: ClusterFacts) -> list[str]:
    """A team's job goes to the team's LocalQueue, at a priority class the cluster's scheduler
    config has: both made by task governance (refused when absent, with the way out)."""
    if team is None:
        return []
    if not facts.team_queue:
        raise violation(
            "team",
            f"team {team!r} does not exist on the cluster (no LocalQueue {team_queue(team)} in"
            f" namespace {team_namespace(team)})",
            "use one of the cluster's teams (GET /api/v1/clusters/{name}/teams), or create the"
            " team first (POST /api/v1/clusters/{name}/teams)",
        )
    if priority is not None and not facts.priority_class:
        raise violation(
            "priority",
            f"priority class {priority!r} does not exist on the cluster (no"
            f" WorkloadPriorityClass {priority_class_object(priority)})",
            "use one of the priority classes GET /api/v1/clusters/{name}/teams lists, or add it"
            " (PATCH /api/v1/clusters/{name}/task-governance with priority_classes)",
        )
    return [
        f"queued by Kueue in {team_queue(team)} (team {team}'s quota)"
        + (f" at priority {priority}" if priority else " at the default priority")
    ]


def plan_submit(cluster: str, spec: JobBase, facts: ClusterFacts) -> Plan:
    rendered = render(spec)
    notes = [*facts.notes]
    notes += check_governance(spec.team, spec.priority, facts)
    notes += check_placement(
        spec.instance_group,
        spec.resources.gpus,
        spec.resources.efa,
        spec.replicas,
        facts,
        spec.resources,
    )
    for secret, env in kube_secrets(spec).items():
        if secret in facts.missing_secrets:
            raise violation(
                f"secret_env.{env}",
                f"the Secret {secret} does not exist in namespace {facts.namespace}",
                "write it first (POST /api/v1/clusters/{name}/secrets"
                ' {"name": "' + secret + '", "data": {"<key>": "<value>"}}), or reference a'
                " Secrets Manager secret by its ARN (secrets_manager_arn)",
            )
    for item in synced(spec):
        notes.append(
            f"secret_env.{item.env}: Secrets Manager secret {item.arn} is copied into the Secret"
            f" {item.secret} (key {SYNCED_KEY}) before the job is applied"
        )
    gpus = spec.resources.gpus
    if spec.nproc_per_node is not None and gpus and spec.nproc_per_node > gpus:
        raise violation(
            "nproc_per_node",
            f"{spec.nproc_per_node} processes per node for {gpus} GPU(s) per pod",
            f"use nproc_per_node <= resources.gpus ({gpus}), or leave it out",
        )
    if spec.elastic is not None:
        group = facts.groups.get(spec.instance_group)
        if group is not None and 0 < group.nodes < spec.elastic.min_replicas:
            raise violation(
                "elastic.min_replicas",
                f"{spec.elastic.min_replicas} but group {spec.instance_group} has"
                f" {group.nodes} node(s)",
                "lower elastic.min_replicas or scale the group up first",
            )
        if facts.hyperpod is None:
            notes.append(
                "the HyperPod cluster's description was not read: the elastic rules on spot"
                " capacity and tiered checkpointing not checked"
            )
        else:
            check_elastic(spec.instance_group, facts.hyperpod)
    notes.append(
        f"{spec.replicas} pod(s) x {nproc(spec)} process(es) on group {spec.instance_group};"
        f" retry budget {spec.run_policy.job_max_retry_count}"
    )
    if spec.elastic is not None:
        elastic = spec.elastic
        if elastic.replica_discrete_values is not None:
            sizes = "at sizes " + ", ".join(str(v) for v in elastic.replica_discrete_values)
        else:
            sizes = f"in steps of {elastic.replica_increment_step or 1}"
        grows = "grows when nodes are added or freed"
        if elastic.scaling_timeout_seconds:
            grows += f" (once they have been free for {elastic.scaling_timeout_seconds} s)"
        notes.append(
            f"elastic: {elastic.min_replicas} to {elastic.max_replicas} pod(s) {sizes}; the"
            f" training operator runs as many as the group's nodes hold, {grows} and shrinks"
            " (not below the minimum) when they go"
        )
    return _object_plan("SubmitJob", f"{cluster}/jobs/{spec.name}", rendered, facts, notes)


def plan_download(cluster: str, spec: ModelDownloadSpec, facts: ClusterFacts) -> Plan:
    notes = [*facts.notes]
    notes += check_placement(spec.instance_group, 0, 0, 1, facts)
    notes.append(f"{spec.repo_id}@{spec.revision} -> {spec.target_path()}")
    return _object_plan(
        "DownloadModel", f"{cluster}/jobs/{spec.name}", download_job(spec), facts, notes
    )
