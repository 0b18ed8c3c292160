"""The steps that make task governance and a cluster's teams equal the request (pure), their
dry-run plans and what the teams list shows.

Enabling task governance: the HyperPod cluster InService, then the EKS add-on
`amazon-sagemaker-hyperpod-taskgovernance` ACTIVE (it installs Kueue and makes what the teams
need in Kubernetes), then the cluster's one scheduler config (CreateClusterSchedulerConfig, or
UpdateClusterSchedulerConfig at its current version when the settings differ). Disabling: only
once no team is left, the scheduler config, then the add-on. A team is a compute quota
(Create/Update/DeleteComputeQuota), named after the team, made only while task governance is
enabled and only of instance types the cluster's instance groups run
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-policies.html).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster_svc.domain.components.base import is_managed, object_ref
from cluster_svc.domain.features.objects import ADDON_FAILED
from cluster_svc.domain.features.plan import planned
from cluster_svc.domain.features.steps import Apply, Call, Remove, Step, Wait
from cluster_svc.domain.governance.actual import (
    BUSY,
    FAILED,
    SETTLED,
    GovernanceActual,
    QuotaActual,
)
from cluster_svc.domain.governance.objects import COMPONENT as STORAGE
from cluster_svc.domain.governance.objects import team_volume
from cluster_svc.domain.identity import MANAGED_BY
from shared.boundary import team_namespace, team_queue
from shared.contracts.governance import (
    DEFAULT_PRIORITY_CLASSES,
    TASK_GOVERNANCE_ADDON,
    NewTeam,
    TaskGovernanceChange,
    TeamChange,
    TeamSettings,
)
from shared.contracts.plan import FieldChange, Plan
from shared.errors import PermanentError

ADDON_VERSION = "v1.2.0-eksbuild.1"
IN_SERVICE = "InService"
TAGS = [{"Key": k, "Value": v} for k, v in MANAGED_BY.items()]

RULE_ENABLED = "task_governance_enabled"
RULE_TYPE = "instance_type_in_cluster"
RULE_HYPERPOD = "hyperpod_cluster"


class GovernanceRefusal(PermanentError):
    """A request refused on a field by a rule that needs actual state (the dry run and the
    gateway's verdict answer it as a 422 naming the field, the rule and the fix)."""

    def __init__(self, field_name: str, rule: str, message: str, hint: str) -> None:
        super().__init__("InvalidGovernanceChange", f"{field_name}: {message}", hint)
        self.field = field_name
        self.rule = rule

    def to_field(self) -> dict[str, str]:
        return {
            "field": self.field,
            "rule": self.rule,
            "message": self.message.partition(": ")[2],
            "hint": self.hint or "",
        }


def invalid(field_name: str, rule: str, message: str, hint: str) -> GovernanceRefusal:
    return GovernanceRefusal(field_name, rule, message, hint)


def _on(value: bool) -> str:
    return "Enabled" if value else "Disabled"


def _covers(wanted: Any, actual: Any) -> bool:
    """Every field of `wanted` is in `actual` with the same value (lists item by item)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(
            _covers(v, actual.get(k)) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(wanted) == len(actual)
            and all(_covers(w, a) for w, a in zip(wanted, actual, strict=True))
        )
    if isinstance(wanted, int | float) and isinstance(actual, int | float):
        return float(wanted) == float(actual)
    return bool(wanted == actual)


def _hyperpod(actual: GovernanceActual, field_name: str) -> str:
    if actual.hyperpod_arn is None:
        raise invalid(
            field_name,
            RULE_HYPERPOD,
            f"cluster {actual.cluster} has no HyperPod cluster {actual.hyperpod_cluster}",
            "task governance runs on a HyperPod cluster: create the cluster with instance"
            " groups, or import it with hyperpod_cluster_name",
        )
    if actual.hyperpod_status in ("Failed", "Deleting"):
        raise PermanentError(
            "ClusterNotInService",
            f"HyperPod cluster {actual.hyperpod_cluster} is {actual.hyperpod_status}",
            "task governance changes on an InService cluster; fix or recreate it first",
        )
    return actual.hyperpod_arn


# ---- task governance: the add-on and the scheduler config -------------------------------------


def wanted_scheduler(actual: GovernanceActual, change: TaskGovernanceChange) -> dict[str, Any]:
    """The SchedulerConfig asked for: the change over what is there (or the defaults)."""
    current = dict(actual.scheduler.config) if actual.scheduler is not None else {}
    classes = change.priority_classes
    if classes is None and "PriorityClasses" not in current:
        classes = list(DEFAULT_PRIORITY_CLASSES)
    out: dict[str, Any] = {
        "PriorityClasses": [{"Name": p.name, "Weight": p.weight} for p in classes]
        if classes is not None
        else list(current.get("PriorityClasses") or []),
        "FairShare": _on(change.fair_share)
        if change.fair_share is not None
        else current.get("FairShare", "Enabled"),
        "IdleResourceSharing": _on(change.idle_resource_sharing)
        if change.idle_resource_sharing is not None
        else current.get("IdleResourceSharing", "Enabled"),
    }
    return out


def _addon_steps(actual: GovernanceActual) -> list[Step]:
    status = actual.addon
    if status in ADDON_FAILED:
        raise PermanentError(
            "AddonFailed",
            f"EKS add-on {TASK_GOVERNANCE_ADDON} is {status}",
            f"inspect it with `aws eks describe-addon --cluster-name {actual.eks_cluster}"
            f" --addon-name {TASK_GOVERNANCE_ADDON}`, fix the cause, delete it, then retry",
        )
    steps: list[Step] = []
    if status == "DELETING":
        steps.append(Wait(f"EKS add-on {TASK_GOVERNANCE_ADDON} finishes deleting"))
    if status is None or status == "DELETING":
        steps.append(
            Call(
                "eks",
                "CreateAddon",
                {
                    "clusterName": actual.eks_cluster,
                    "addonName": TASK_GOVERNANCE_ADDON,
                    "addonVersion": ADDON_VERSION,
                    "tags": dict(MANAGED_BY),
                },
            )
        )
    if not actual.addon_ready:
        steps.append(Wait(f"EKS add-on {TASK_GOVERNANCE_ADDON} is ACTIVE"))
    return steps


def governance_steps(actual: GovernanceActual, change: TaskGovernanceChange) -> list[Step]:
    arn = _hyperpod(actual, "enabled")
    want = change.enabled if change.enabled is not None else actual.enabled
    if change.enabled is None and not actual.enabled:
        raise invalid(
            "enabled",
            RULE_ENABLED,
            f"task governance is not enabled on cluster {actual.cluster}, so it has no"
            " scheduler config to change",
            "send enabled: true with the settings",
        )
    scheduler = actual.scheduler
    if not want:
        return _disable_steps(actual)
    steps: list[Step] = []
    if actual.hyperpod_status != IN_SERVICE:
        steps.append(Wait(f"HyperPod cluster {actual.hyperpod_cluster} is {IN_SERVICE}"))
    steps += _addon_steps(actual)
    config = wanted_scheduler(actual, change)
    if scheduler is None:
        steps.append(
            Call(
                "sagemaker",
                "CreateClusterSchedulerConfig",
                {
                    "Name": actual.hyperpod_cluster,
                    "ClusterArn": arn,
                    "SchedulerConfig": config,
                    "Description": f"Task governance of Hyperpilot cluster {actual.cluster}",
                    "Tags": TAGS,
                },
            )
        )
        steps.append(Wait(f"the scheduler config of {actual.hyperpod_cluster} is Created"))
        return steps
    if scheduler.status in FAILED:
        raise PermanentError(
            "SchedulerConfigFailed",
            f"scheduler config {scheduler.id} is {scheduler.status}: {scheduler.failure or ''}",
            "read it with `aws sagemaker describe-cluster-scheduler-config"
            f" --cluster-scheduler-config-id {scheduler.id}`, fix the cause, then retry",
        )
    if scheduler.status in BUSY:
        steps.append(Wait(f"scheduler config {scheduler.id} is {scheduler.status.lower()}"))
    if not _covers(config, dict(scheduler.config)) or not _covers(dict(scheduler.config), config):
        steps.append(
            Call(
                "sagemaker",
                "UpdateClusterSchedulerConfig",
                {
                    "ClusterSchedulerConfigId": scheduler.id,
                    "TargetVersion": scheduler.version,
                    "SchedulerConfig": config,
                },
            )
        )
        steps.append(Wait(f"scheduler config {scheduler.id} is Updated"))
    return steps


def _disable_steps(actual: GovernanceActual) -> list[Step]:
    teams = sorted(actual.quotas)
    if teams:
        raise PermanentError(
            "TeamsExist",
            f"cluster {actual.cluster} still has teams: {', '.join(teams)}; their compute quotas"
            " need task governance",
            "delete the teams first (DELETE /api/v1/clusters/{name}/teams/{team}), then"
            " disable task governance",
        )
    steps: list[Step] = []
    scheduler = actual.scheduler
    if scheduler is not None:
        if scheduler.status != "Deleting":
            steps.append(
                Call(
                    "sagemaker",
                    "DeleteClusterSchedulerConfig",
                    {"ClusterSchedulerConfigId": scheduler.id},
                )
            )
        steps.append(Wait(f"scheduler config {scheduler.id} is deleted"))
    if actual.addon is not None:
        if actual.addon != "DELETING":
            steps.append(
                Call(
                    "eks",
                    "DeleteAddon",
                    {"clusterName": actual.eks_cluster, "addonName": TASK_GOVERNANCE_ADDON},
                )
            )
        steps.append(Wait(f"EKS add-on {TASK_GOVERNANCE_ADDON} is removed"))
    return steps


def governance_diff(
    actual: GovernanceActual, change: TaskGovernanceChange
) -> dict[str, FieldChange]:
    out: dict[str, FieldChange] = {}
    if change.enabled is not None and change.enabled != actual.enabled:
        out["enabled"] = FieldChange(actual=actual.enabled, requested=change.enabled)
    if change.enabled is False or actual.hyperpod_arn is None:
        return out
    current = dict(actual.scheduler.config) if actual.scheduler is not None else {}
    wanted = wanted_scheduler(actual, change)
    for key, name in (
        ("PriorityClasses", "priority_classes"),
        ("FairShare", "fair_share"),
        ("IdleResourceSharing", "idle_resource_sharing"),
    ):
        if current.get(key) != wanted[key]:
            out[name] = FieldChange(actual=current.get(key), requested=wanted[key])
    return out


def governance_plan(actual: GovernanceActual, change: TaskGovernanceChange) -> Plan:
    steps = governance_steps(actual, change)
    calls, objects, notes = planned(steps)
    return Plan(
        command="UpdateTaskGovernance",
        target=f"{actual.cluster}/task-governance",
        noop=not steps,
        diff=governance_diff(actual, change),
        calls=calls,
        objects=objects,
        notes=notes,
    )


# ---- teams: compute quotas --------------------------------------------------------------------


def _ready_for_teams(actual: GovernanceActual, field_name: str) -> str:
    arn = _hyperpod(actual, field_name)
    if not actual.enabled:
        raise invalid(
            field_name,
            RULE_ENABLED,
            f"task governance is not enabled on cluster {actual.cluster} (add-on"
            f" {actual.addon or 'absent'}, scheduler config"
            f" {'present' if actual.scheduler else 'absent'})",
            f"enable it first: PATCH /api/v1/clusters/{actual.cluster}/task-governance"
            ' {"enabled": true}',
        )
    return arn


def _check_types(actual: GovernanceActual, settings: TeamSettings) -> None:
    for index, resource in enumerate(settings.resources or []):
        if resource.instance_type not in actual.instance_types:
            known = ", ".join(sorted(actual.instance_types)) or "none"
            raise invalid(
                f"resources[{index}].instance_type",
                RULE_TYPE,
                f"cluster {actual.cluster} runs no {resource.instance_type} (its instance"
                f" groups run: {known})",
                "give quota only of instance types the cluster's instance groups run, or add"
                " a group of that type first",
            )


def _apply(settings: TeamSettings, current: dict[str, Any]) -> dict[str, Any]:
    """The quota's create/update parameters: `settings` over `current`."""
    config = dict(current.get("ComputeQuotaConfig") or {})
    target = dict(current.get("ComputeQuotaTarget") or {})
    out = dict(current)
    if settings.resources is not None:
        config["ComputeQuotaResources"] = [r.to_aws() for r in settings.resources]
    sharing = dict(config.get("ResourceSharingConfig") or {"Strategy": "LendAndBorrow"})
    if settings.sharing is not None:
        sharing["Strategy"] = settings.sharing
        if settings.sharing != "LendAndBorrow":
            sharing.pop("BorrowLimit", None)
    if settings.borrow_limit is not None:
        if sharing.get("Strategy") != "LendAndBorrow":
            raise invalid(
                "borrow_limit",
                "borrow_needs_lend_and_borrow",
                f"the team's sharing is {sharing.get('Strategy')}; only LendAndBorrow borrows",
                "send sharing: LendAndBorrow with borrow_limit",
            )
        sharing["BorrowLimit"] = settings.borrow_limit
    config["ResourceSharingConfig"] = sharing
    if settings.preempt is not None:
        config["PreemptTeamTasks"] = settings.preempt
    config.setdefault("PreemptTeamTasks", "LowerPriority")
    if settings.fair_share_weight is not None:
        target["FairShareWeight"] = settings.fair_share_weight
    if settings.active is not None:
        out["ActivationState"] = _on(settings.active)
    out.setdefault("ActivationState", "Enabled")
    if settings.description is not None:
        out["Description"] = settings.description
    out["ComputeQuotaConfig"] = config
    out["ComputeQuotaTarget"] = target
    return out


def _failed(quota: QuotaActual) -> PermanentError:
    return PermanentError(
        "ComputeQuotaFailed",
        f"the compute quota of team {quota.team} ({quota.id}) is {quota.status}:"
        f" {quota.failure or 'no reason given'}",
        f"read it with `aws sagemaker describe-compute-quota --compute-quota-id {quota.id}`,"
        " fix the cause, then retry",
    )


def _settle(quota: QuotaActual) -> list[Step]:
    if quota.status in FAILED:
        raise _failed(quota)
    if quota.status not in SETTLED:
        return [Wait(f"the compute quota of team {quota.team} is {quota.status.lower()}")]
    return []


def storage_steps(actual: GovernanceActual, team: str) -> list[Step]:
    """The shared bucket's claim in the team's namespace, once task governance made it."""
    found = actual.storage.get(team)
    if actual.bucket is None or found is None:
        return []
    if not found.namespace:
        return [Wait(f"task governance makes namespace {team_namespace(team)}")]
    steps: list[Step] = []
    for wanted, current in zip(
        team_volume(actual.bucket, actual.region, team), (found.volume, found.claim), strict=True
    ):
        if current is None:
            steps.append(Apply(wanted))
        elif not is_managed(dict(current), STORAGE):
            kind, name = wanted["kind"], wanted["metadata"]["name"]
            raise PermanentError(
                "ClaimTaken",
                f"{kind} {name} exists in the team's storage and was not made by Hyperpilot",
                f"delete or rename {kind} {name}, then retry",
            )
    return steps


def create_team_steps(actual: GovernanceActual, team: NewTeam) -> list[Step]:
    wanted = _apply(team, {"ComputeQuotaTarget": {"TeamName": team.name}})
    found = actual.quotas.get(team.name)
    if found is not None:
        if _covers(wanted, found.params()):
            # a retry of the create, or its next pass: settle, then the team's storage
            return _settle(found) or storage_steps(actual, team.name)
        raise PermanentError(
            "TeamExists",
            f"team {team.name} already exists on cluster {actual.cluster} with other settings",
            f"change it with PATCH /api/v1/clusters/{actual.cluster}/teams/{team.name}, or pick"
            " another name",
        )
    arn = _ready_for_teams(actual, "name")
    _check_types(actual, team)
    return [
        Call(
            "sagemaker",
            "CreateComputeQuota",
            {"Name": team.name, "ClusterArn": arn, **wanted, "Tags": TAGS},
        ),
        Wait(f"the compute quota of team {team.name} is Created"),
    ]


def _known(actual: GovernanceActual, team: str) -> QuotaActual:
    found = actual.quotas.get(team)
    if found is None:
        known = ", ".join(sorted(actual.quotas)) or "none"
        raise PermanentError(
            "TeamNotFound",
            f"cluster {actual.cluster} has no team {team} (teams: {known})",
            f"list them with GET /api/v1/clusters/{actual.cluster}/teams",
        )
    return found


def update_team_steps(actual: GovernanceActual, team: str, change: TeamChange) -> list[Step]:
    found = _known(actual, team)
    _check_types(actual, change)
    wanted = _apply(change, found.params())
    if _covers(wanted, found.params()):
        return _settle(found)
    _ready_for_teams(actual, "team")
    steps: list[Step] = []
    if found.status in FAILED and found.status != "UpdateFailed":
        raise _failed(found)
    if found.status in BUSY:
        steps.append(Wait(f"the compute quota of team {team} is {found.status.lower()}"))
    steps.append(
        Call(
            "sagemaker",
            "UpdateComputeQuota",
            {"ComputeQuotaId": found.id, "TargetVersion": found.version, **wanted},
        )
    )
    steps.append(Wait(f"the compute quota of team {team} is Updated"))
    return steps


def delete_team_steps(actual: GovernanceActual, team: str) -> list[Step]:
    found = actual.quotas.get(team)
    if found is None:
        return []  # already gone: a retried delete is done
    steps: list[Step] = []
    storage = actual.storage.get(team)
    if storage is not None and actual.bucket is not None:
        objects = team_volume(actual.bucket, actual.region, team)
        for wanted, current in reversed(
            list(zip(objects, (storage.volume, storage.claim), strict=True))
        ):
            if current is not None and is_managed(dict(current), STORAGE):
                steps.append(Remove(object_ref(wanted)))
    if found.status != "Deleting":
        steps.append(Call("sagemaker", "DeleteComputeQuota", {"ComputeQuotaId": found.id}))
    steps.append(Wait(f"the compute quota of team {team} is deleted"))
    return steps


def team_diff(
    actual: GovernanceActual, team: str, settings: TeamSettings | None
) -> dict[str, FieldChange]:
    found = actual.quotas.get(team)
    now = team_read(found) if found is not None else None
    if settings is None:  # a delete
        return {"team": FieldChange(actual=team, requested=None)} if found else {}
    wanted = team_read_of(team, _apply(settings, found.params() if found else {}))
    if now is None:
        return {"team": FieldChange(actual=None, requested=wanted)}
    return {
        key: FieldChange(actual=now.get(key), requested=value)
        for key, value in wanted.items()
        if key in settings.model_dump(exclude_none=True) and now.get(key) != value
    }


def team_plan(
    command: str,
    actual: GovernanceActual,
    team: str,
    steps: Sequence[Step],
    settings: TeamSettings | None,
) -> Plan:
    calls, objects, notes = planned(steps)
    if settings is not None and command == "CreateTeam":
        notes.append(
            f"task governance makes namespace {team_namespace(team)} and LocalQueue"
            f" {team_queue(team)}: jobs and endpoints with team {team} go there"
        )
        if actual.bucket is not None:
            notes.append(
                f"then the shared bucket {actual.bucket} as claim s3-claim in"
                f" {team_namespace(team)} (a PersistentVolume of its own), mounted by the"
                " team's jobs at /s3"
            )
    return Plan(
        command=command,
        target=f"{actual.cluster}/teams/{team}",
        noop=not steps,
        diff=team_diff(actual, team, settings),
        calls=calls,
        objects=objects,
        notes=notes,
    )


# ---- what the teams list shows ----------------------------------------------------------------


def _resource_read(item: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"instance_type": item.get("InstanceType")}
    for key, name in (
        ("Count", "count"),
        ("Accelerators", "accelerators"),
        ("VCpu", "vcpu"),
        ("MemoryInGiB", "memory_gib"),
    ):
        if item.get(key) is not None:
            out[name] = item[key]
    partition = item.get("AcceleratorPartition")
    if partition:
        out["mig"] = {"profile": partition.get("Type"), "count": partition.get("Count")}
    return out


def team_read_of(team: str, params: dict[str, Any]) -> dict[str, Any]:
    config = params.get("ComputeQuotaConfig") or {}
    sharing = config.get("ResourceSharingConfig") or {}
    target = params.get("ComputeQuotaTarget") or {}
    return {
        "resources": [_resource_read(r) for r in config.get("ComputeQuotaResources") or []],
        "sharing": sharing.get("Strategy"),
        "borrow_limit": sharing.get("BorrowLimit"),
        "preempt": config.get("PreemptTeamTasks"),
        "fair_share_weight": target.get("FairShareWeight"),
        "active": params.get("ActivationState", "Enabled") == "Enabled",
        "description": params.get("Description"),
    }


def team_read(quota: QuotaActual) -> dict[str, Any]:
    return {
        "name": quota.team,
        "namespace": team_namespace(quota.team),
        "queue": team_queue(quota.team),
        "compute_quota_id": quota.id,
        "status": quota.status,
        "version": quota.version,
        **team_read_of(quota.team, quota.params()),
    }


def teams_read(actual: GovernanceActual) -> dict[str, Any]:
    scheduler = actual.scheduler
    return {
        "cluster": actual.cluster,
        "task_governance": {
            "enabled": actual.enabled,
            "addon": TASK_GOVERNANCE_ADDON,
            "addon_status": actual.addon,
            "scheduler_config_id": scheduler.id if scheduler else None,
            "scheduler_config_status": scheduler.status if scheduler else None,
            "priority_classes": [
                {"name": n, "weight": w} for n, w in actual.priority_classes().items()
            ],
            "fair_share": (scheduler.config.get("FairShare") == "Enabled") if scheduler else None,
            "idle_resource_sharing": (scheduler.config.get("IdleResourceSharing") == "Enabled")
            if scheduler
            else None,
        },
        "teams": [team_read(q) for _, q in sorted(actual.quotas.items())],
    }
