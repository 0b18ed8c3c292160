"""What the HyperPod task-governance add-on renders in Kubernetes from the cluster's scheduler
config and compute quotas (sim.governance), as HyperPod documents it
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance.html
and its "Policies" and "Tasks" pages; the HyperPod CLI's job templates carry the same names):

- per team `<team>`: namespace `hyperpod-ns-<team>`, LocalQueue `hyperpod-ns-<team>-localqueue`
  in it, ClusterQueue `hyperpod-ns-<team>-clusterqueue` in the cluster's one cohort;
- per instance type that a quota names: a ResourceFlavor named as the type, selecting its nodes
  by `node.kubernetes.io/instance-type`; every team's ClusterQueue lists every flavor (0 where
  the team has no quota), so that idle capacity can be lent to and borrowed by any team;
- per priority class `<name>` of the scheduler config: WorkloadPriorityClass `<name>-priority`
  with the class's weight as its value (jobs carry `kueue.x-k8s.io/priority-class: <name>-priority`).

Quota per flavor: `Count` whole instances give the instance type's vCPUs, memory and GPUs
(Neuron devices on Trainium) times the count; `Accelerators`, `VCpu`, `MemoryInGiB` give those
amounts, the others in the instance type's proportion; an `AcceleratorPartition` (MIG) gives
`Count` partitions as the resource the NVIDIA device plugin advertises for its profile
(`nvidia.com/mig-1g.10gb`), its vCPUs and memory in proportion to the GPUs those partitions make
up, and no whole GPUs. The ClusterQueues cover cpu, memory, GPUs, Neuron devices and every MIG
resource a quota names (0 where a team has none of it) (API_ComputeQuotaResourceConfig.html:
"If you don't specify a value for vCPU and MemoryInGiB, SageMaker AI automatically allocates
ratio-based values"). Sharing (API_ResourceSharingConfig.html): `Lend` lends idle quota and
borrows nothing (borrowingLimit 0); `DontLend` neither lends nor borrows (lendingLimit 0,
borrowingLimit 0); `LendAndBorrow` lends and borrows up to BorrowLimit percent of its quota, or
the AbsoluteBorrowLimits of a type. `PreemptTeamTasks: LowerPriority` lets a team's task preempt
its own lower-priority tasks (withinClusterQueue LowerPriority); a team always reclaims its lent
quota (reclaimWithinCohort Any). A Disabled quota's ClusterQueue is held (stopPolicy Hold).

Kueue's own configuration (`kueue-system/kueue-manager-config`) enables fair sharing when the
scheduler config's FairShare is Enabled (its default).

Objects the add-on manages carry `sagemaker.amazonaws.com/task-governance: "true"`; those of a
quota or policy that is gone are deleted (the team's namespace stays, with what runs in it).
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

import yaml

from sim.governance import QuotaResource, SchedulerPolicy, TeamQuota
from sim.k8s.errors import ApiError
from sim.k8s.gpu_devices import partitions_per_gpu
from sim.k8s.instances import capacity

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

KUEUE = "kueue.x-k8s.io/v1beta1"
MANAGED = "sagemaker.amazonaws.com/task-governance"
QUOTA_ID = "sagemaker.amazonaws.com/compute-quota-id"
CONFIG_ID = "sagemaker.amazonaws.com/cluster-scheduler-config-id"
COHORT = "hyperpod-cohort"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
GPU = "nvidia.com/gpu"
NEURON = "aws.amazon.com/neuron"
COVERED = ("cpu", "memory", GPU, NEURON)
GIB = 1024**3


def namespace_of(team: str) -> str:
    return f"hyperpod-ns-{team}"


def local_queue_of(team: str) -> str:
    return f"hyperpod-ns-{team}-localqueue"


def cluster_queue_of(team: str) -> str:
    return f"hyperpod-ns-{team}-clusterqueue"


def priority_class_of(name: str) -> str:
    return f"{name}-priority"


def mig_resource(profile: str) -> str:
    """The extended resource of a MIG profile: mig-1g.10gb -> nvidia.com/mig-1g.10gb."""
    return f"nvidia.com/mig-{profile.removeprefix('mig-')}"


def covered(teams: list[TeamQuota]) -> list[str]:
    """The resources every ClusterQueue covers: the base four and the quotas' MIG resources."""
    mig = sorted({mig_resource(r.mig_profile) for t in teams for r in t.resources if r.mig_profile})
    return [*COVERED, *mig]


def amounts(res: QuotaResource) -> dict[str, float]:
    """The Kueue resources one quota entry gives (cpu in cores, memory in bytes)."""
    cap = capacity(res.instance_type)
    accelerators = cap.gpus or cap.neuron
    if res.mig_profile and res.mig_count is not None:
        per_gpu = partitions_per_gpu(res.instance_type, res.mig_profile.removeprefix("mig-"))
        share = res.mig_count / (per_gpu * cap.gpus) if per_gpu and cap.gpus else 0.0
        return {
            "cpu": res.vcpu if res.vcpu is not None else share * cap.cpu,
            "memory": (res.memory_gib if res.memory_gib is not None else share * cap.memory_gib)
            * GIB,
            GPU: 0.0,
            NEURON: 0.0,
            mig_resource(res.mig_profile): float(res.mig_count),
        }
    if res.count is not None:
        share = float(res.count)
    elif res.accelerators is not None and accelerators:
        share = res.accelerators / accelerators
    elif res.vcpu is not None:
        share = res.vcpu / cap.cpu
    elif res.memory_gib is not None:
        share = res.memory_gib / cap.memory_gib
    else:
        share = 0.0
    out = {
        "cpu": res.vcpu if res.vcpu is not None else share * cap.cpu,
        "memory": (res.memory_gib if res.memory_gib is not None else share * cap.memory_gib) * GIB,
        GPU: 0.0,
        NEURON: 0.0,
    }
    if cap.gpus:
        out[GPU] = float(res.accelerators if res.accelerators is not None else share * cap.gpus)
    if cap.neuron:
        out[NEURON] = float(
            res.accelerators if res.accelerators is not None else share * cap.neuron
        )
    return out


def quantity(resource: str, value: float) -> str | int:
    """A Kueue quota as the API stores it: whole numbers, cpu in millicores when fractional."""
    if resource == "cpu" and value != int(value):
        return f"{math.floor(value * 1000)}m"
    if resource == "memory":
        gib = value / GIB
        return f"{int(gib)}Gi" if gib == int(gib) else f"{math.floor(value / 1024**2)}Mi"
    return math.floor(value)


def _labels(extra: dict[str, str]) -> dict[str, str]:
    return {MANAGED: "true", **extra}


def render(policy: SchedulerPolicy | None, teams: list[TeamQuota]) -> list[dict[str, Any]]:
    """Every object the add-on keeps for `policy` and `teams`, in the order to apply them."""
    objects: list[dict[str, Any]] = [manager_config(policy)]
    flavors = sorted({r.instance_type for t in teams for r in t.resources})
    for flavor in flavors:
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor, "labels": _labels({})},
                "spec": {"nodeLabels": {INSTANCE_TYPE: flavor}},
            }
        )
    if policy is not None:
        for name, weight in policy.priority_classes:
            objects.append(
                {
                    "apiVersion": KUEUE,
                    "kind": "WorkloadPriorityClass",
                    "metadata": {
                        "name": priority_class_of(name),
                        "labels": _labels({CONFIG_ID: policy.config_id}),
                    },
                    "value": weight,
                    "description": f"HyperPod task governance priority class {name}",
                }
            )
    for team in teams:
        labels = _labels({QUOTA_ID: team.quota_id})
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace_of(team.team), "labels": dict(labels)},
            }
        )
        objects.append(_cluster_queue(team, flavors, covered(teams), labels))
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {
                    "name": local_queue_of(team.team),
                    "namespace": namespace_of(team.team),
                    "labels": dict(labels),
                },
                "spec": {"clusterQueue": cluster_queue_of(team.team)},
            }
        )
    return objects


def manager_config(policy: SchedulerPolicy | None) -> dict[str, Any]:
    """Kueue's configuration (config.kueue.x-k8s.io/v1beta1 Configuration in the
    `kueue-manager-config` ConfigMap): fair sharing as the scheduler config's FairShare says
    (API_SchedulerConfig.html: teams borrow idle compute by their FairShareWeight when Enabled,
    first come first served when Disabled)."""
    fair = policy is not None and policy.fair_share
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "fairSharing": {"enable": fair},
        # pods outside the system namespaces are managed when they carry a queue name
        # (https://kueue.sigs.k8s.io/docs/tasks/run/plain_pods/ and .../run/deployment/)
        "managedJobsNamespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", "kueue-system"],
                }
            ]
        },
        "integrations": {
            "frameworks": [
                "batch/job",
                "ray.io/rayjob",
                "sagemaker.amazonaws.com/hyperpodpytorchjob",
                "pod",
                "deployment",
            ]
        },
        "resources": {"excludeResourcePrefixes": ["vpc.amazonaws.com/", "hugepages-"]},
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "kueue-manager-config",
            "namespace": "kueue-system",
            "labels": _labels({}),
        },
        "data": {"controller_manager_config.yaml": yaml.safe_dump(config, sort_keys=False)},
    }


def _cluster_queue(
    team: TeamQuota, flavors: list[str], resource_names: list[str], labels: dict[str, str]
) -> dict[str, Any]:
    own = {r.instance_type: amounts(r) for r in team.resources}
    absolute = {r.instance_type: amounts(r) for r in team.absolute_borrow_limits}
    flavor_quotas = []
    for flavor in flavors:
        nominal = own.get(flavor) or {}
        resources = []
        for resource in resource_names:
            entry: dict[str, Any] = {
                "name": resource,
                "nominalQuota": quantity(resource, nominal.get(resource, 0.0)),
            }
            if team.strategy == "LendAndBorrow":
                if flavor in absolute:
                    limit = absolute[flavor].get(resource, 0.0)
                else:
                    limit = nominal.get(resource, 0.0) * team.borrow_limit_percent / 100
                entry["borrowingLimit"] = quantity(resource, limit)
            else:
                entry["borrowingLimit"] = 0
            if team.strategy == "DontLend":
                entry["lendingLimit"] = 0
            resources.append(entry)
        flavor_quotas.append({"name": flavor, "resources": resources})
    spec: dict[str, Any] = {
        "cohort": COHORT,
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {
            "reclaimWithinCohort": "Any",
            "withinClusterQueue": "LowerPriority"
            if team.preempt_team_tasks == "LowerPriority"
            else "Never",
            "borrowWithinCohort": {"policy": "Never"},
        },
        "stopPolicy": "None" if team.active else "Hold",
    }
    if flavor_quotas:
        spec["resourceGroups"] = [
            {"coveredResources": list(resource_names), "flavors": flavor_quotas}
        ]
    if team.fair_share_weight is not None:
        spec["fairSharing"] = {"weight": team.fair_share_weight}
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": cluster_queue_of(team.team), "labels": dict(labels)},
        "spec": spec,
    }


_KINDS = (
    ("v1", "Namespace"),
    (KUEUE, "LocalQueue"),
    (KUEUE, "ClusterQueue"),
    (KUEUE, "WorkloadPriorityClass"),
    (KUEUE, "ResourceFlavor"),
)


def sync(server: ApiServer, policy: SchedulerPolicy | None, teams: list[TeamQuota]) -> None:
    """Apply what `render` gives and delete the add-on's objects it no longer gives."""
    if not server.api.registry.has_crd("kueue.x-k8s.io", "clusterqueues"):
        raise ValueError(
            "Kueue is not installed: the amazon-sagemaker-hyperpod-taskgovernance add-on must "
            "be ACTIVE before task governance is rendered"
        )
    wanted = render(policy, teams)
    keep = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in wanted}
    for obj in wanted:
        meta = obj["metadata"]
        existing = server.get(
            obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace", "")
        )
        if existing is not None:
            # keep what others wrote (status, other labels) and replace what the add-on owns
            merged = dict(existing)
            merged["metadata"] = dict(
                existing["metadata"],
                labels={**(existing["metadata"].get("labels") or {}), **meta["labels"]},
            )
            for key, value in obj.items():
                if key not in ("metadata", "apiVersion", "kind", "status"):
                    merged[key] = value
            if merged == existing:
                continue
            obj = merged
        server.apply(obj)
    for api_version, kind in _KINDS:
        if kind == "Namespace":
            continue  # a team's namespace stays: what runs in it is the team's
        for obj in server.list_objects(api_version, kind):
            meta = obj["metadata"]
            if (meta.get("labels") or {}).get(MANAGED) != "true":
                continue
            if (kind, meta.get("namespace", ""), meta["name"]) in keep:
                continue
            rt = server.resource(api_version, kind)
            with contextlib.suppress(ApiError):
                server.api.delete(rt, meta.get("namespace") or "", meta["name"])
