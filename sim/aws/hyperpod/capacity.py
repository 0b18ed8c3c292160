"""Where HyperPod nodes may go and how many: subnets and security groups, training plans,
account quotas, roles, as CreateCluster/UpdateCluster/BatchAddClusterNodes check them."""

from __future__ import annotations

from typing import Any

from sim.aws import moto_state
from sim.aws.account import TrainingPlan
from sim.aws.errors import AwsError
from sim.aws.hyperpod.base import HyperPodBase
from sim.aws.hyperpod.model import (
    Placement,
)


class Capacity(HyperPodBase):
    """The synchronous checks of placement, training plans and quotas."""

    def _check_role(self, arn: str | None, what: str) -> None:
        if arn and not moto_state.role_exists(self.ctx.account_id, arn):
            raise AwsError(
                "ValidationException", f"{what} {arn} does not exist or cannot be assumed."
            )

    def _placements(self, vpc: dict[str, Any] | None) -> list[Placement]:
        """Where nodes may go: the subnets of `vpc`, or every zone of the region."""
        if not vpc:
            return [
                Placement(name, zid, None, "10.1.0.0/16")
                for name, zid in moto_state.zones(self.ctx.account_id, self.ctx.region)
            ]
        for group_id in vpc.get("SecurityGroupIds", []):
            if not moto_state.security_group_exists(self.ctx.account_id, self.ctx.region, group_id):
                raise AwsError("ValidationException", f"Security group {group_id} does not exist.")
        result = []
        for subnet_id in vpc.get("Subnets", []):
            info = moto_state.subnet(self.ctx.account_id, self.ctx.region, subnet_id)
            if info is None:
                raise AwsError("ValidationException", f"Subnet {subnet_id} does not exist.")
            result.append(Placement(info.zone_name, info.zone_id, info.subnet_id, info.cidr))
        return result

    def _group_placements(
        self, cluster_vpc: dict[str, Any] | None, spec: dict[str, Any]
    ) -> list[Placement]:
        instance_type = spec["InstanceType"]
        candidates = self._placements(spec.get("OverrideVpcConfig") or cluster_vpc)
        offered = [p for p in candidates if self.ctx.account.offered_in(instance_type, p.zone_id)]
        if not offered:
            zones = ", ".join(sorted({p.zone_id for p in candidates}))
            raise AwsError(
                "ValidationException",
                f"Instance type {instance_type} is not supported in the Availability Zones of the "
                f"subnets provided for instance group {spec['InstanceGroupName']} ({zones}).",
            )
        plan = self._plan_of(spec)
        if plan is not None:
            plan_zones = {
                c.availability_zone_id for c in plan.capacity if c.instance_type == instance_type
            }
            offered = [p for p in offered if p.zone_id in plan_zones]
            if not offered:
                raise AwsError(
                    "ValidationException",
                    f"None of the subnets of instance group {spec['InstanceGroupName']} is in the "
                    f"Availability Zone of training plan {plan.name} ({', '.join(sorted(plan_zones))}).",
                )
        return offered

    def _plan_of(self, spec: dict[str, Any]) -> TrainingPlan | None:
        arn = spec.get("TrainingPlanArn")
        if not arn:
            return None
        plan = self.ctx.account.training_plan(arn)
        if plan is None:
            raise AwsError("ValidationException", f"Training plan {arn} does not exist.")
        if plan.status != "Active":
            raise AwsError(
                "ValidationException", f"Training plan {plan.name} is {plan.status}, not Active."
            )
        # A plan is bought for one target resource (SearchTrainingPlanOfferings' TargetResources):
        # a training-job plan cannot back a HyperPod instance group.
        if "hyperpod-cluster" not in plan.target_resources:
            raise AwsError(
                "ValidationException",
                f"Training plan {plan.name} is for {', '.join(plan.target_resources)}, not "
                "hyperpod-cluster.",
            )
        return plan

    def plan_in_use(self, plan_arn: str, instance_type: str | None = None) -> int:
        """Instances of a training plan held by instance groups."""
        used = 0
        for cluster in self.clusters.values():
            for group in cluster.groups.values():
                if group.spec.get("TrainingPlanArn") in (plan_arn,) and instance_type in (
                    None,
                    group.instance_type,
                ):
                    used += group.target
        return used

    def _check_plan_capacity(self, spec: dict[str, Any], current: int) -> None:
        plan = self._plan_of(spec)
        if plan is None:
            return
        instance_type = spec["InstanceType"]
        total = plan.total(instance_type)
        available = total - self.plan_in_use(plan.arn, instance_type) + current
        if total == 0 or spec["InstanceCount"] > available:
            raise AwsError(
                "ValidationException",
                f"Training plan {plan.name} has {max(available, 0)} {instance_type} instances "
                f"available; instance group {spec['InstanceGroupName']} asks for "
                f"{spec['InstanceCount']}.",
            )

    def _usage(self, instance_type: str) -> int:
        used = 0
        for cluster in self.clusters.values():
            if cluster.status in ("Failed", "Deleting"):
                continue
            for group in cluster.groups.values():
                if group.instance_type == instance_type and not group.spec.get("TrainingPlanArn"):
                    used += group.target
        return used

    def _check_quota(self, instance_type: str, delta: int) -> None:
        if delta <= 0:
            return
        quota = self.ctx.account.cluster_quota(instance_type)
        if quota is None:
            return
        used = self._usage(instance_type)
        if used + delta > quota.value:
            raise AwsError(
                "ResourceLimitExceeded",
                f"The account-level service limit '{quota.name}' is {int(quota.value)} Instances, "
                f"with current utilization of {used} Instances and a request delta of {delta} "
                "Instances. Please use AWS Service Quotas to request an increase for this quota. "
                "If AWS Service Quotas is not available, contact AWS support to request an "
                "increase for this quota.",
            )

    def _check_group_spec(self, spec: dict[str, Any]) -> None:
        if not spec.get("InstanceType"):
            raise AwsError(
                "ValidationException",
                f"Instance group {spec['InstanceGroupName']} must specify InstanceType.",
            )
        self._check_role(spec.get("ExecutionRole"), "Execution role")
