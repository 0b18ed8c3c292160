"""SageMaker HyperPod task governance: cluster scheduler configs (the cluster policy: priority
classes, fair share, idle resource sharing) and compute quotas (teams: per instance type
allocations, lend/borrow, preemption), with the rules AWS documents, rendered into the EKS
cluster by the task-governance add-on through the `TaskGovernanceHooks` seam (sim.governance).

Requests reach these handlers only after botocore's model accepted them (sim.aws.validation);
what is checked here is what the model cannot say. Each rule names the page it follows:
- API references: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateComputeQuota.html,
  API_UpdateComputeQuota.html, API_CreateClusterSchedulerConfig.html,
  API_UpdateClusterSchedulerConfig.html, API_ResourceSharingConfig.html,
  API_SchedulerConfig.html, API_ComputeQuotaResourceConfig.html.
- Setup and policies: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-setup.html
  (the add-on is a prerequisite, EKS-orchestrated clusters only) and
  sagemaker-hyperpod-eks-operate-console-ui-governance-policies.html (one cluster policy per
  cluster; one compute allocation per team).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sim.aws.context import SimContext, lower_alnum
from sim.aws.errors import AwsError
from sim.governance import QuotaResource, SchedulerPolicy, TaskGovernanceHooks, TeamQuota
from sim.k8s.gpu_devices import MIG_PROFILES

if TYPE_CHECKING:
    from sim.aws.eks import Eks
    from sim.aws.hyperpod import HyperPod
    from sim.aws.hyperpod.model import Cluster

log = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any]], dict[str, Any]]

ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
# API_ResourceSharingConfig.html: "The values can be 1 - 500 percent of idle compute that the
# team is allowed to borrow. Default is 50." (the model allows 0-10000).
BORROW_LIMIT_RANGE = (1, 500)
DEFAULT_BORROW_LIMIT = 50
# MIG partitions exist on the NVIDIA A100/H100/H200/B200 instance types
# (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-gpu-partitioning.html).
MIG_TYPES = frozenset(
    {
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
        "ml.p5.48xlarge",
        "ml.p5e.48xlarge",
        "ml.p5en.48xlarge",
        "ml.p6-b200.48xlarge",
    }
)
# GPUs per instance type for the types a quota may give Accelerators of (the SageMaker instance
# type pages); the others have none (Trainium types count Neuron devices, not nvidia.com/gpu).
GPUS = {
    "ml.p4d.24xlarge": 8,
    "ml.p4de.24xlarge": 8,
    "ml.p5.48xlarge": 8,
    "ml.p5e.48xlarge": 8,
    "ml.p5en.48xlarge": 8,
    "ml.p5.4xlarge": 1,
    "ml.p6-b200.48xlarge": 8,
    "ml.p6-b300.48xlarge": 8,
    "ml.p6e-gb200.36xlarge": 4,
    "ml.g5.xlarge": 1,
    "ml.g5.2xlarge": 1,
    "ml.g5.4xlarge": 1,
    "ml.g5.8xlarge": 1,
    "ml.g5.16xlarge": 1,
    "ml.g5.12xlarge": 4,
    "ml.g5.24xlarge": 4,
    "ml.g5.48xlarge": 8,
    "ml.g6.xlarge": 1,
    "ml.g6.2xlarge": 1,
    "ml.g6.4xlarge": 1,
    "ml.g6.8xlarge": 1,
    "ml.g6.16xlarge": 1,
    "ml.g6.12xlarge": 4,
    "ml.g6.24xlarge": 4,
    "ml.g6.48xlarge": 8,
    "ml.g6e.xlarge": 1,
    "ml.g6e.2xlarge": 1,
    "ml.g6e.4xlarge": 1,
    "ml.g6e.8xlarge": 1,
    "ml.g6e.16xlarge": 1,
    "ml.g6e.12xlarge": 4,
    "ml.g6e.24xlarge": 4,
    "ml.g6e.48xlarge": 8,
    "ml.gr6.4xlarge": 1,
    "ml.gr6.8xlarge": 1,
    "ml.g4dn.xlarge": 1,
    "ml.g4dn.2xlarge": 1,
    "ml.g4dn.4xlarge": 1,
    "ml.g4dn.8xlarge": 1,
    "ml.g4dn.16xlarge": 1,
    "ml.g4dn.12xlarge": 4,
}
# Trainium types: their accelerators are Neuron devices (aws.amazon.com/neuron)
NEURON = {"ml.trn1.32xlarge": 16, "ml.trn1n.32xlarge": 16, "ml.trn2.48xlarge": 16}
STEADY = ("Created", "Updated")


def _invalid(message: str) -> AwsError:
    return AwsError("ValidationException", message)


def _conflict(message: str) -> AwsError:
    return AwsError("ConflictException", message)


class TaskGovernance:
    """The ten task-governance operations and the Kubernetes side they drive."""

    def __init__(self, ctx: SimContext, hyperpod: HyperPod, eks: Eks) -> None:
        self.ctx = ctx
        self.hyperpod = hyperpod
        self.eks = eks
        self.configs: dict[str, dict[str, Any]] = {}
        self.quotas: dict[str, dict[str, Any]] = {}

    def operations(self) -> dict[str, Handler]:
        return {
            "CreateClusterSchedulerConfig": self.create_config,
            "UpdateClusterSchedulerConfig": self.update_config,
            "DescribeClusterSchedulerConfig": self.describe_config,
            "ListClusterSchedulerConfigs": self.list_configs,
            "DeleteClusterSchedulerConfig": self.delete_config,
            "CreateComputeQuota": self.create_quota,
            "UpdateComputeQuota": self.update_quota,
            "DescribeComputeQuota": self.describe_quota,
            "ListComputeQuotas": self.list_quotas,
            "DeleteComputeQuota": self.delete_quota,
        }

    # ---- the cluster -----------------------------------------------------------------------

    def _cluster(self, arn: str) -> Cluster:
        cluster = self.hyperpod.find(arn)
        if cluster is None or cluster.arn != arn:
            raise _invalid(
                f"Cluster {arn} does not exist: ClusterArn must name an existing "
                "SageMaker HyperPod cluster (ListClusters gives their ARNs)."
            )
        # governance setup page: task governance is for EKS-orchestrated clusters only
        if cluster.eks_name is None:
            raise _invalid(
                f"Cluster {cluster.name} is not orchestrated by Amazon EKS: task governance "
                "needs a HyperPod cluster with an EKS orchestrator."
            )
        if cluster.status not in ("InService", "Updating", "SystemUpdating"):
            raise _invalid(
                f"Cluster {cluster.name} is {cluster.status}: task governance can be configured "
                "once the cluster is InService."
            )
        eks = self.eks.clusters.get(cluster.eks_name)
        addon = (eks.addons.get(ADDON) if eks is not None else None) or {}
        # governance setup page: the task governance add-on must be installed on the EKS
        # cluster before policies and compute allocations are created
        if addon.get("status") not in ("ACTIVE", "UPDATING"):
            state = addon.get("status") or "not installed"
            raise _invalid(
                f"The Amazon EKS add-on {ADDON} is {state} on EKS cluster {cluster.eks_name}: "
                f"install it (eks:CreateAddon addonName={ADDON}) and wait until it is ACTIVE, "
                "then configure task governance."
            )
        return cluster

    def _instance_types(self, cluster: Cluster) -> set[str]:
        return {g.instance_type for g in cluster.groups.values()}

    # ---- scheduler configs -------------------------------------------------------------------

    def _check_scheduler(self, config: dict[str, Any]) -> None:
        classes = config.get("PriorityClasses") or []
        # (at most 10 classes: botocore's model bounds the list, the generic validation refuses)
        names = [c["Name"] for c in classes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise _invalid(
                f"SchedulerConfig.PriorityClasses names {', '.join(dupes)} more than once: "
                "each priority class needs a unique Name."
            )

    def create_config(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._cluster(p["ClusterArn"])
        self._check_scheduler(p["SchedulerConfig"])
        # policies page: a cluster has one cluster policy; edit it instead of adding another
        for other in self.configs.values():
            if other["ClusterArn"] == cluster.arn and other["Status"] != "Deleting":
                raise _conflict(
                    f"Cluster {cluster.name} already has cluster scheduler config "
                    f"{other['ClusterSchedulerConfigId']} ({other['Name']}): a cluster has one; "
                    "change it with UpdateClusterSchedulerConfig."
                )
        config_id = lower_alnum(12)
        now = self.ctx.now()
        record: dict[str, Any] = {
            "ClusterSchedulerConfigArn": self.ctx.arn(
                "sagemaker", f"cluster-scheduler-config/{config_id}"
            ),
            "ClusterSchedulerConfigId": config_id,
            "Name": p["Name"],
            "ClusterSchedulerConfigVersion": 1,
            "Status": "Creating",
            "ClusterArn": cluster.arn,
            "SchedulerConfig": _scheduler_defaults(p["SchedulerConfig"]),
            "Description": p.get("Description"),
            "CreationTime": now,
            "LastModifiedTime": now,
            "_tags": list(p.get("Tags") or []),
            "_versions": {},
        }
        record["_versions"][1] = self._snapshot(record)
        self.configs[config_id] = record
        self._settle(record, "Created")
        return {
            "ClusterSchedulerConfigArn": record["ClusterSchedulerConfigArn"],
            "ClusterSchedulerConfigId": config_id,
        }

    def _config(self, config_id: str) -> dict[str, Any]:
        record = self.configs.get(config_id)
        if record is None:
            raise AwsError(
                "ResourceNotFound", f"Cluster scheduler config {config_id} does not exist."
            )
        return record

    def update_config(self, p: dict[str, Any]) -> dict[str, Any]:
        record = self._config(p["ClusterSchedulerConfigId"])
        self._check_version(record, "ClusterSchedulerConfigVersion", p["TargetVersion"])
        if p.get("SchedulerConfig") is not None:
            self._check_scheduler(p["SchedulerConfig"])
            record["SchedulerConfig"] = _scheduler_defaults(p["SchedulerConfig"])
        if p.get("Description") is not None:
            record["Description"] = p["Description"]
        return self._updated(record, "ClusterSchedulerConfigVersion", "ClusterSchedulerConfigArn")

    def describe_config(self, p: dict[str, Any]) -> dict[str, Any]:
        record = self._config(p["ClusterSchedulerConfigId"])
        view = self._versioned(record, "ClusterSchedulerConfigVersion", p)
        return _public(view)

    def list_configs(self, p: dict[str, Any]) -> dict[str, Any]:
        items = self._filtered(list(self.configs.values()), p)
        keys = (
            "ClusterSchedulerConfigArn",
            "ClusterSchedulerConfigId",
            "ClusterSchedulerConfigVersion",
            "Name",
            "CreationTime",
            "LastModifiedTime",
            "Status",
            "ClusterArn",
        )
        page, token = _page(items, p)
        return {
            "ClusterSchedulerConfigSummaries": [{k: r.get(k) for k in keys} for r in page],
            "NextToken": token,
        }

    def delete_config(self, p: dict[str, Any]) -> dict[str, Any]:
        record = self._config(p["ClusterSchedulerConfigId"])
        self._delete(record, self.configs, "ClusterSchedulerConfigId")
        return {}

    # ---- compute quotas ------------------------------------------------------------------------

    def _check_resources(
        self, cluster: Cluster, resources: list[dict[str, Any]], where: str
    ) -> None:
        types = self._instance_types(cluster)
        seen: set[str] = set()
        for n, res in enumerate(resources, start=1):
            itype = res["InstanceType"]
            at = f"{where}.{n} ({itype})"
            if itype in seen:
                raise _invalid(f"{at}: the instance type is listed twice; give it one entry.")
            seen.add(itype)
            # API_ComputeQuotaResourceConfig.html: the instance type of the instance group of
            # the cluster the quota allocates from
            if itype not in types:
                raise _invalid(
                    f"{at}: cluster {cluster.name} has no instance group of type {itype} "
                    f"(its instance groups run {', '.join(sorted(types)) or 'nothing'}): "
                    "allocate only instance types the cluster has."
                )
            amounts = [k for k in ("Accelerators", "VCpu", "MemoryInGiB") if res.get(k) is not None]
            if res.get("Count") is None and not amounts and not res.get("AcceleratorPartition"):
                raise _invalid(
                    f"{at}: give Count (whole instances) or Accelerators, VCpu or MemoryInGiB."
                )
            if res.get("Count") is not None and amounts:
                raise _invalid(
                    f"{at}: Count allocates whole instances and cannot be combined with "
                    f"{', '.join(amounts)}; give either Count or the amounts."
                )
            if res.get("Accelerators") and itype not in GPUS and itype not in NEURON:
                raise _invalid(
                    f"{at}: {itype} has no accelerators, so Accelerators must be 0 or left out."
                )
            partition = res.get("AcceleratorPartition")
            if partition and itype not in MIG_TYPES:
                raise _invalid(
                    f"{at}: {itype} does not support MIG partitions (AcceleratorPartition): "
                    f"only {', '.join(sorted(MIG_TYPES))} do."
                )
            if partition:
                self._check_partition(itype, partition, res, at)

    @staticmethod
    def _check_partition(
        itype: str, partition: dict[str, Any], res: dict[str, Any], at: str
    ) -> None:
        """AcceleratorPartitionConfig: the MIG profile must be one the type's GPUs can be
        partitioned into (API_AcceleratorPartitionConfig.html: "The available profile types
        depend on the instance type"; the profiles per type are the HyperPod CLI's
        INSTANCE_TYPE_MIG_PROFILES, as sim.k8s.gpu_devices has them), and the partitions are
        in place of whole GPUs, so Accelerators cannot be given beside them."""
        profiles = MIG_PROFILES.get(itype.removeprefix("ml."), ())
        profile = f"{partition.get('Type', '')}".removeprefix("mig-")
        if profile not in profiles:
            raise _invalid(
                f"{at}: AcceleratorPartition.Type {partition.get('Type')} is not a MIG profile "
                f"of {itype}: use one of {', '.join('mig-' + p for p in profiles)}."
            )
        if res.get("Accelerators"):
            raise _invalid(
                f"{at}: AcceleratorPartition allocates MIG partitions of the GPUs and cannot be "
                "combined with Accelerators (whole GPUs); give one or the other."
            )

    def _check_quota_config(self, cluster: Cluster, config: dict[str, Any]) -> None:
        self._check_resources(
            cluster,
            config.get("ComputeQuotaResources") or [],
            "ComputeQuotaConfig.ComputeQuotaResources",
        )
        sharing = config.get("ResourceSharingConfig") or {}
        limit = sharing.get("BorrowLimit")
        low, high = BORROW_LIMIT_RANGE
        # API_ResourceSharingConfig.html: BorrowLimit is 1 - 500 percent
        if limit is not None and not low <= limit <= high:
            raise _invalid(
                f"ComputeQuotaConfig.ResourceSharingConfig.BorrowLimit {limit} is out of range: "
                f"it is a percentage of the team's quota from {low} to {high}."
            )
        self._check_resources(
            cluster,
            sharing.get("AbsoluteBorrowLimits") or [],
            "ComputeQuotaConfig.ResourceSharingConfig.AbsoluteBorrowLimits",
        )

    def create_quota(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._cluster(p["ClusterArn"])
        self._check_quota_config(cluster, p["ComputeQuotaConfig"])
        team = p["ComputeQuotaTarget"]["TeamName"]
        self._check_unique(cluster, p["Name"], team, None)
        quota_id = lower_alnum(12)
        now = self.ctx.now()
        record: dict[str, Any] = {
            "ComputeQuotaArn": self.ctx.arn("sagemaker", f"compute-quota/{quota_id}"),
            "ComputeQuotaId": quota_id,
            "Name": p["Name"],
            "Description": p.get("Description"),
            "ComputeQuotaVersion": 1,
            "Status": "Creating",
            "ClusterArn": cluster.arn,
            "ComputeQuotaConfig": _quota_defaults(p["ComputeQuotaConfig"]),
            "ComputeQuotaTarget": dict(p["ComputeQuotaTarget"]),
            "ActivationState": p.get("ActivationState") or "Enabled",
            "CreationTime": now,
            "LastModifiedTime": now,
            "_tags": list(p.get("Tags") or []),
            "_versions": {},
        }
        record["_versions"][1] = self._snapshot(record)
        self.quotas[quota_id] = record
        self._settle(record, "Created")
        return {"ComputeQuotaArn": record["ComputeQuotaArn"], "ComputeQuotaId": quota_id}

    def _check_unique(self, cluster: Cluster, name: str, team: str, own: str | None) -> None:
        # policies page: one compute allocation per team on a cluster
        for other in self.quotas.values():
            if other["ClusterArn"] != cluster.arn or other["ComputeQuotaId"] == own:
                continue
            if other["Status"] == "Deleting":
                continue
            if other["Name"] == name:
                raise _conflict(
                    f"Cluster {cluster.name} already has compute quota {name} "
                    f"({other['ComputeQuotaId']}): choose another Name or update that one."
                )
            if other["ComputeQuotaTarget"]["TeamName"] == team:
                raise _conflict(
                    f"Team {team} already has compute quota {other['Name']} "
                    f"({other['ComputeQuotaId']}) on cluster {cluster.name}: a team has one "
                    "compute quota per cluster; change it with UpdateComputeQuota."
                )

    def _quota(self, quota_id: str) -> dict[str, Any]:
        record = self.quotas.get(quota_id)
        if record is None:
            raise AwsError("ResourceNotFound", f"Compute quota {quota_id} does not exist.")
        return record

    def update_quota(self, p: dict[str, Any]) -> dict[str, Any]:
        record = self._quota(p["ComputeQuotaId"])
        self._check_version(record, "ComputeQuotaVersion", p["TargetVersion"])
        cluster = self._cluster(record["ClusterArn"])
        if p.get("ComputeQuotaConfig") is not None:
            self._check_quota_config(cluster, p["ComputeQuotaConfig"])
        target = p.get("ComputeQuotaTarget")
        if target is not None and target["TeamName"] != record["ComputeQuotaTarget"]["TeamName"]:
            # the team is the quota's namespace and queues: it is chosen at creation
            raise _invalid(
                f"ComputeQuotaTarget.TeamName cannot change (it is "
                f"{record['ComputeQuotaTarget']['TeamName']}): create a compute quota for team "
                f"{target['TeamName']} instead."
            )
        if p.get("ComputeQuotaConfig") is not None:
            record["ComputeQuotaConfig"] = _quota_defaults(p["ComputeQuotaConfig"])
        if target is not None:
            record["ComputeQuotaTarget"] = dict(target)
        for key in ("ActivationState", "Description"):
            if p.get(key) is not None:
                record[key] = p[key]
        return self._updated(record, "ComputeQuotaVersion", "ComputeQuotaArn")

    def describe_quota(self, p: dict[str, Any]) -> dict[str, Any]:
        record = self._quota(p["ComputeQuotaId"])
        return _public(self._versioned(record, "ComputeQuotaVersion", p))

    def list_quotas(self, p: dict[str, Any]) -> dict[str, Any]:
        items = self._filtered(list(self.quotas.values()), p)
        keys = (
            "ComputeQuotaArn",
            "ComputeQuotaId",
            "Name",
            "ComputeQuotaVersion",
            "Status",
            "ClusterArn",
            "ComputeQuotaConfig",
            "ComputeQuotaTarget",
            "ActivationState",
            "CreationTime",
            "LastModifiedTime",
        )
        page, token = _page(items, p)
        return {
            "ComputeQuotaSummaries": [{k: copy.deepcopy(r.get(k)) for k in keys} for r in page],
            "NextToken": token,
        }

    def delete_quota(self, p: dict[str, Any]) -> dict[str, Any]:
        record = self._quota(p["ComputeQuotaId"])
        self._delete(record, self.quotas, "ComputeQuotaId")
        return {}

    # ---- shared lifecycle ----------------------------------------------------------------------

    @staticmethod
    def _snapshot(record: dict[str, Any]) -> dict[str, Any]:
        return copy.deepcopy({k: v for k, v in record.items() if k != "_versions"})

    def _check_version(self, record: dict[str, Any], key: str, target: int) -> None:
        name = record["Name"]
        if record["Status"] not in (*STEADY, "CreateFailed", "UpdateFailed"):
            raise _conflict(f"{name} is {record['Status']}: wait until it is Created or Updated.")
        # API_UpdateComputeQuota.html / API_UpdateClusterSchedulerConfig.html: TargetVersion
        # "must match the current version": an update made from a stale read is refused
        if target != record[key]:
            raise _conflict(
                f"TargetVersion {target} does not match the current version {record[key]} of "
                f"{name}: describe it again and retry with TargetVersion {record[key]}."
            )

    def _updated(self, record: dict[str, Any], version_key: str, arn_key: str) -> dict[str, Any]:
        record[version_key] += 1
        record["Status"] = "Updating"
        record["LastModifiedTime"] = self.ctx.now()
        record["_versions"][record[version_key]] = self._snapshot(record)
        self._settle(record, "Updated")
        return {arn_key: record[arn_key], version_key: record[version_key]}

    def _versioned(self, record: dict[str, Any], key: str, p: dict[str, Any]) -> dict[str, Any]:
        wanted = p.get(key)
        if wanted is None or wanted == record[key]:
            return record
        old = record["_versions"].get(wanted)
        if old is None:
            raise AwsError(
                "ResourceNotFound",
                f"{record['Name']} has no version {wanted} (its versions are 1 to {record[key]}).",
            )
        return dict(old, Status=record["Status"])

    def _settle(self, record: dict[str, Any], status: str) -> None:
        version = record.get("ClusterSchedulerConfigVersion", record.get("ComputeQuotaVersion"))

        def done() -> None:
            current = record.get("ClusterSchedulerConfigVersion", record.get("ComputeQuotaVersion"))
            if record["Status"] in ("Creating", "Updating") and current == version:
                record["Status"] = status
                record["_versions"][current]["Status"] = status
                self._sync(record["ClusterArn"])

        self.ctx.scheduler.after(self.ctx.profile.eks_addon_install, done)

    def _delete(self, record: dict[str, Any], table: dict[str, dict[str, Any]], key: str) -> None:
        if record["Status"] in ("Creating", "Updating", "Deleting"):
            raise _conflict(
                f"{record['Name']} is {record['Status']}: wait until it is Created or Updated."
            )
        record["Status"] = "Deleting"
        record["LastModifiedTime"] = self.ctx.now()

        def gone() -> None:
            if table.get(record[key]) is record:
                del table[record[key]]
                self._sync(record["ClusterArn"])

        self.ctx.scheduler.after(self.ctx.profile.eks_addon_install, gone)

    @staticmethod
    def _filtered(items: list[dict[str, Any]], p: dict[str, Any]) -> list[dict[str, Any]]:
        after: datetime | None = p.get("CreatedAfter")
        before: datetime | None = p.get("CreatedBefore")
        if p.get("ClusterArn"):
            items = [r for r in items if r["ClusterArn"] == p["ClusterArn"]]
        if p.get("NameContains"):
            items = [r for r in items if p["NameContains"] in r["Name"]]
        if p.get("Status"):
            items = [r for r in items if r["Status"] == p["Status"]]
        if after is not None:
            items = [r for r in items if r["CreationTime"].timestamp() > _epoch(after)]
        if before is not None:
            items = [r for r in items if r["CreationTime"].timestamp() < _epoch(before)]
        sort_by = p.get("SortBy") or "CreationTime"
        items.sort(
            key=lambda r: (
                r["CreationTime"].timestamp() if sort_by == "CreationTime" else str(r[sort_by])
            ),
            reverse=(p.get("SortOrder") or "Descending") == "Descending",
        )
        return items

    # ---- the Kubernetes side -------------------------------------------------------------------

    def _sync(self, cluster_arn: str) -> None:
        """Tell the emulator the cluster's whole task-governance state (what the add-on's
        controller renders in Kubernetes)."""
        kube = self.ctx.kube
        cluster = self.hyperpod.find(cluster_arn)
        if not isinstance(kube, TaskGovernanceHooks) or cluster is None or not cluster.eks_name:
            return
        eks = self.eks.clusters.get(cluster.eks_name)
        if eks is None or not eks.kube_started:
            return
        policy = next(
            (
                _policy(r)
                for r in self.configs.values()
                if r["ClusterArn"] == cluster_arn and r["Status"] in STEADY
            ),
            None,
        )
        teams = [
            _team(r)
            for r in sorted(self.quotas.values(), key=lambda r: r["CreationTime"])
            if r["ClusterArn"] == cluster_arn and r["Status"] in (*STEADY, "Deleting")
        ]
        try:
            kube.sync_task_governance(cluster.eks_name, policy, teams)
        except Exception:
            log.exception("task governance of %s could not be rendered", cluster.eks_name)


def _epoch(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _scheduler_defaults(config: dict[str, Any]) -> dict[str, Any]:
    # API_SchedulerConfig.html: FairShare defaults to Enabled
    out = copy.deepcopy(config)
    out.setdefault("FairShare", "Enabled")
    out.setdefault("PriorityClasses", [])
    return out


def _quota_defaults(config: dict[str, Any]) -> dict[str, Any]:
    # API_ResourceSharingConfig.html: Strategy defaults to LendAndBorrow, BorrowLimit to 50;
    # API_ComputeQuotaConfig.html: PreemptTeamTasks defaults to LowerPriority
    out = copy.deepcopy(config)
    sharing = out.setdefault("ResourceSharingConfig", {"Strategy": "LendAndBorrow"})
    if sharing["Strategy"] == "LendAndBorrow":
        sharing.setdefault("BorrowLimit", DEFAULT_BORROW_LIMIT)
    out.setdefault("PreemptTeamTasks", "LowerPriority")
    out.setdefault("ComputeQuotaResources", [])
    return out


def _resource(res: dict[str, Any]) -> QuotaResource:
    return QuotaResource(
        instance_type=res["InstanceType"],
        count=res.get("Count"),
        accelerators=res.get("Accelerators"),
        vcpu=res.get("VCpu"),
        memory_gib=res.get("MemoryInGiB"),
        mig_profile=(res.get("AcceleratorPartition") or {}).get("Type"),
        mig_count=(res.get("AcceleratorPartition") or {}).get("Count"),
    )


def _policy(record: dict[str, Any]) -> SchedulerPolicy:
    config = record["SchedulerConfig"]
    return SchedulerPolicy(
        config_id=record["ClusterSchedulerConfigId"],
        priority_classes=tuple((c["Name"], int(c["Weight"])) for c in config["PriorityClasses"]),
        fair_share=config.get("FairShare") != "Disabled",
        idle_resource_sharing=config.get("IdleResourceSharing") == "Enabled",
    )


def _team(record: dict[str, Any]) -> TeamQuota:
    config = record["ComputeQuotaConfig"]
    sharing = config["ResourceSharingConfig"]
    return TeamQuota(
        quota_id=record["ComputeQuotaId"],
        name=record["Name"],
        team=record["ComputeQuotaTarget"]["TeamName"],
        resources=tuple(_resource(r) for r in config["ComputeQuotaResources"]),
        strategy=sharing["Strategy"],
        borrow_limit_percent=int(sharing.get("BorrowLimit") or DEFAULT_BORROW_LIMIT),
        absolute_borrow_limits=tuple(
            _resource(r) for r in sharing.get("AbsoluteBorrowLimits") or []
        ),
        preempt_team_tasks=config["PreemptTeamTasks"],
        fair_share_weight=record["ComputeQuotaTarget"].get("FairShareWeight"),
        active=record["ActivationState"] == "Enabled" and record["Status"] != "Deleting",
    )


def _public(record: dict[str, Any]) -> dict[str, Any]:
    return {k: copy.deepcopy(v) for k, v in record.items() if not k.startswith("_")}


def _page(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    try:
        start = int(p.get("NextToken") or 0)
    except ValueError:
        raise _invalid(
            "NextToken is not a token this API gave: pass the NextToken of the previous page."
        ) from None
    size = int(p.get("MaxResults") or 10)
    return items[start : start + size], str(start + size) if start + size < len(items) else None
