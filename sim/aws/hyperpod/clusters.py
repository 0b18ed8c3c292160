"""HyperPod clusters and their instance groups: Create/Describe/List/Update/DeleteCluster,
including continuous provisioning and the access entries of the nodes' roles."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sim.aws.context import lower_alnum
from sim.aws.errors import AwsError
from sim.aws.hyperpod.capacity import Capacity
from sim.aws.hyperpod.model import (
    CLUSTER_CONFIG_KEYS,
    Cluster,
    Group,
    Node,
    Placement,
    page_of,
)

log = logging.getLogger(__name__)


class ClusterOps(Capacity):
    """Cluster and instance group operations."""

    def create_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p["ClusterName"]
        if self.find(name) is not None:
            raise AwsError("ResourceInUse", f"Cluster {name} already exists.")
        groups = p.get("InstanceGroups") or []
        if not groups and not p.get("RestrictedInstanceGroups"):
            raise AwsError("ValidationException", "At least one instance group is required.")
        names = [g["InstanceGroupName"] for g in groups]
        if len(set(names)) != len(names):
            raise AwsError(
                "ValidationException", "Instance group names must be unique within a cluster."
            )
        orchestrator = p.get("Orchestrator") or {}
        eks_arn = (orchestrator.get("Eks") or {}).get("ClusterArn")
        if eks_arn:
            if not p.get("VpcConfig"):
                raise AwsError(
                    "ValidationException", "VpcConfig is required for an EKS-orchestrated cluster."
                )
            if not self._eks.is_active(eks_arn):
                raise AwsError(
                    "ValidationException", f"EKS cluster {eks_arn} does not exist or is not ACTIVE."
                )
            if self._eks.authentication_mode(eks_arn) not in ("API", "API_AND_CONFIG_MAP"):
                raise AwsError(
                    "ValidationException",
                    f"The authentication mode of EKS cluster {eks_arn} must be API or "
                    "API_AND_CONFIG_MAP for HyperPod to add access entries for its nodes.",
                )
            self._check_one_per_eks(eks_arn)
        auto_scaling = p.get("AutoScaling")
        if auto_scaling and auto_scaling.get("Mode") == "Enable":
            if not eks_arn:
                raise AwsError("ValidationException", "AutoScaling requires an EKS orchestrator.")
            if not p.get("ClusterRole"):
                raise AwsError("ValidationException", "AutoScaling requires a ClusterRole.")
        self._check_role(p.get("ClusterRole"), "Cluster role")
        placements: dict[str, list[Placement]] = {}
        deltas: dict[str, int] = {}
        for spec in groups:
            self._check_group_spec(spec)
            placements[spec["InstanceGroupName"]] = self._group_placements(p.get("VpcConfig"), spec)
            self._check_plan_capacity(spec, 0)
            if not spec.get("TrainingPlanArn"):
                deltas[spec["InstanceType"]] = (
                    deltas.get(spec["InstanceType"], 0) + spec["InstanceCount"]
                )
        for instance_type, delta in deltas.items():
            self._check_quota(instance_type, delta)

        cluster_id = lower_alnum(12)
        cluster = Cluster(
            name=name,
            cluster_id=cluster_id,
            arn=self.ctx.arn("sagemaker", f"cluster/{cluster_id}"),
            creation_time=self.ctx.now(),
            status="Creating",
            config={k: p[k] for k in CLUSTER_CONFIG_KEYS if p.get(k) is not None},
            auto_scaling=self._auto_scaling(auto_scaling),
            tags=list(p.get("Tags") or []),
        )
        self.clusters[cluster_id] = cluster
        for spec in groups:
            group = Group(
                spec=dict(spec), target=spec["InstanceCount"], image_id=spec.get("ImageId")
            )
            cluster.groups[group.name] = group
            for index in range(group.target):
                self._new_node(cluster, group, placements[group.name], index)
        self._changed(cluster)
        self._grant_node_roles(cluster)
        self._event(cluster, "Cluster creation started.")
        self._cluster_later(
            cluster, self.ctx.profile.hyperpod_create, lambda: self._finish_create(cluster)
        )
        return {"ClusterArn": cluster.arn}

    def _check_one_per_eks(self, eks_arn: str) -> None:
        """An EKS cluster orchestrates one HyperPod cluster: "a one-to-one mapping between an
        Amazon EKS cluster and a HyperPod cluster" (Getting started with Amazon EKS support in
        SageMaker HyperPod, https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html).
        A cluster being deleted no longer holds its EKS cluster."""
        for other in self.clusters.values():
            arn = (other.config.get("Orchestrator") or {}).get("Eks", {}).get("ClusterArn")
            if arn == eks_arn and other.status != "Deleting":
                raise AwsError(
                    "ValidationException",
                    f"EKS cluster {eks_arn} is already associated with HyperPod cluster "
                    f"{other.arn}; an EKS cluster can orchestrate one HyperPod cluster.",
                )

    def _node_roles(self, cluster: Cluster) -> set[str]:
        return {str(g.spec["ExecutionRole"]) for g in cluster.groups.values()}

    def _grant_node_roles(self, cluster: Cluster) -> None:
        """HyperPod gives its nodes' execution roles HYPERPOD_LINUX access entries on EKS."""
        arn = (cluster.config.get("Orchestrator") or {}).get("Eks", {}).get("ClusterArn")
        if arn:
            for role in sorted(self._node_roles(cluster)):
                self._eks.grant_node_role(arn, role)

    def _revoke_node_roles(self, cluster: Cluster) -> None:
        arn = (cluster.config.get("Orchestrator") or {}).get("Eks", {}).get("ClusterArn")
        if not arn:
            return
        still_used = {
            role
            for other in self.clusters.values()
            if other is not cluster and other.eks_name == cluster.eks_name
            for role in self._node_roles(other)
        }
        for role in sorted(self._node_roles(cluster) - still_used):
            self._eks.revoke_node_role(arn, role)

    def _auto_scaling_in_service(self, cluster: Cluster) -> None:
        """AutoScaling reaches InService. With Mode Enable and AutoScalerType Karpenter, HyperPod
        installs and runs its managed Karpenter: the HyperpodNodeClass and NodePool kinds are
        served in the cluster from then on ("HyperPod handles Karpenter installation", per
        https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-autoscaling.html).
        Without this a caller waiting for those kinds waits for ever."""
        if cluster.auto_scaling is None:
            return
        cluster.auto_scaling["Status"] = "InService"
        karpenter = (
            cluster.auto_scaling.get("Mode") == "Enable"
            and cluster.auto_scaling.get("AutoScalerType") == "Karpenter"
        )
        eks = cluster.eks_name
        if (
            karpenter
            and eks is not None
            and self.ctx.kube is not None
            and self.ctx.eks_kube_ready(eks)
        ):
            try:
                self.ctx.kube.install(eks, "karpenter")
            except Exception:
                log.exception("installing managed Karpenter on %s failed", eks)

    def _auto_scaling(self, spec: dict[str, Any] | None) -> dict[str, Any] | None:
        if not spec:
            return None
        return {**spec, "Status": "Creating" if spec.get("Mode") == "Enable" else "InService"}

    def _continuous(self, cluster: Cluster) -> bool:
        return cluster.config.get("NodeProvisioningMode") == "Continuous"

    def _finish_create(self, cluster: Cluster) -> None:
        continuous = self._continuous(cluster)
        for group in cluster.groups.values():
            nodes = [n for n in cluster.nodes.values() if n.group == group.name]
            message = self._shortfall(group, nodes) if nodes else None
            if message is None:
                continue
            if continuous:
                self._provision_later(cluster, group, nodes, message)
                continue
            cluster.status = "Failed"
            cluster.failure_message = message
            group.status = "Failed"
            for node in list(cluster.nodes.values()):
                self._remove_node(cluster, node)
            self._event(cluster, message, "Error", "InstanceGroup", group.name)
            self._event(cluster, "Cluster creation failed.", "Error")
            return
        for group in cluster.groups.values():
            group.status = "InService"
        for node in list(cluster.nodes.values()):
            if node.status == "Pending":
                self._bring_up(cluster, node)
        self._auto_scaling_in_service(cluster)
        cluster.status = "InService"
        self._event(cluster, "Cluster is InService.")

    def _provision_later(
        self, cluster: Cluster, group: Group, nodes: list[Node], message: str
    ) -> None:
        """Continuous mode: drop the nodes that got no capacity, say so, and retry later."""
        for node in nodes:
            self._remove_node(cluster, node)
        self._event(cluster, message, "Warn", "InstanceGroup", group.name)
        self._cluster_later(
            cluster,
            self.ctx.profile.node_boot,
            lambda: self._retry(cluster, group),
            same_operation=False,
        )

    def _retry(self, cluster: Cluster, group: Group) -> None:
        if cluster.groups.get(group.name) is not group or cluster.status == "Deleting":
            return
        present = sum(
            1
            for n in cluster.nodes.values()
            if n.group == group.name and n.status != "ShuttingDown"
        )
        missing = group.target - present
        if missing <= 0:
            return
        try:
            placements = self._group_placements(cluster.config.get("VpcConfig"), group.spec)
        except AwsError as err:
            self._event(cluster, err.message, "Warn", "InstanceGroup", group.name)
            self._cluster_later(
                cluster,
                self.ctx.profile.node_boot,
                lambda: self._retry(cluster, group),
                same_operation=False,
            )
            return
        nodes = [self._new_node(cluster, group, placements, present + i) for i in range(missing)]
        self._changed(cluster)
        self._boot_later(cluster, group, nodes)

    def _boot_later(self, cluster: Cluster, group: Group, nodes: list[Node]) -> None:
        """Continuous mode: new nodes boot on their own, the cluster staying InService."""

        def boot() -> None:
            live = [
                n for n in nodes if cluster.nodes.get(n.instance_id) is n and n.status == "Pending"
            ]
            if not live:
                return
            message = self._shortfall(group, live)
            if message is not None:
                self._provision_later(cluster, group, live, message)
                return
            for node in live:
                self._bring_up(cluster, node)

        self._cluster_later(cluster, self.ctx.profile.node_boot, boot, same_operation=False)

    def describe_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        result: dict[str, Any] = {
            "ClusterArn": cluster.arn,
            "ClusterName": cluster.name,
            "ClusterStatus": cluster.status,
            "CreationTime": cluster.creation_time,
            "FailureMessage": cluster.failure_message,
            "InstanceGroups": [self._group_details(cluster, g) for g in cluster.groups.values()],
        }
        for key in CLUSTER_CONFIG_KEYS:
            if key in cluster.config and key != "RestrictedInstanceGroups":
                result[key] = cluster.config[key]
        if cluster.auto_scaling is not None:
            result["AutoScaling"] = cluster.auto_scaling
        return result

    def _group_details(self, cluster: Cluster, group: Group) -> dict[str, Any]:
        spec = group.spec
        current = sum(
            1
            for n in cluster.nodes.values()
            if n.group == group.name and n.status != "ShuttingDown"
        )
        details: dict[str, Any] = {
            "CurrentCount": current,
            "TargetCount": group.target,
            "InstanceGroupName": group.name,
            "InstanceType": group.instance_type,
            "Status": group.status,
        }
        for key in (
            "MinInstanceCount",
            "LifeCycleConfig",
            "ExecutionRole",
            "ThreadsPerCore",
            "InstanceStorageConfigs",
            "OnStartDeepHealthChecks",
            "TrainingPlanArn",
            "OverrideVpcConfig",
            "ScheduledUpdateConfig",
            "NetworkInterface",
            "CapacityRequirements",
        ):
            if spec.get(key) is not None:
                details["MinCount" if key == "MinInstanceCount" else key] = spec[key]
        details.setdefault("ThreadsPerCore", 2 if group.instance_type.startswith("ml.p") else 1)
        if spec.get("TrainingPlanArn"):
            details["TrainingPlanStatus"] = "Active"
        if group.image_id:
            details["CurrentImageId"] = group.image_id
            details["DesiredImageId"] = group.image_id
        kube = spec.get("KubernetesConfig")
        if kube:
            details["KubernetesConfig"] = {
                "CurrentLabels": kube.get("Labels") or {},
                "DesiredLabels": kube.get("Labels") or {},
                "CurrentTaints": kube.get("Taints") or [],
                "DesiredTaints": kube.get("Taints") or [],
            }
        return details

    def list_clusters(self, p: dict[str, Any]) -> dict[str, Any]:
        clusters = list(self.clusters.values())
        if p.get("NameContains"):
            clusters = [c for c in clusters if p["NameContains"] in c.name]
        if p.get("CreationTimeAfter"):
            clusters = [c for c in clusters if c.creation_time > p["CreationTimeAfter"]]
        if p.get("CreationTimeBefore"):
            clusters = [c for c in clusters if c.creation_time < p["CreationTimeBefore"]]
        if p.get("TrainingPlanArn"):
            clusters = [
                c
                for c in clusters
                if any(
                    g.spec.get("TrainingPlanArn") == p["TrainingPlanArn"] for g in c.groups.values()
                )
            ]
        key: Callable[[Cluster], Any] = (
            (lambda c: c.name) if p.get("SortBy") == "NAME" else (lambda c: c.creation_time)
        )
        clusters.sort(key=key, reverse=p.get("SortOrder", "Descending") == "Descending")
        page, token = page_of(clusters, p)
        return {
            "ClusterSummaries": [
                {
                    "ClusterArn": c.arn,
                    "ClusterName": c.name,
                    "CreationTime": c.creation_time,
                    "ClusterStatus": c.status,
                    "TrainingPlanArns": sorted(
                        {
                            g.spec["TrainingPlanArn"]
                            for g in c.groups.values()
                            if g.spec.get("TrainingPlanArn")
                        }
                    ),
                }
                for c in page
            ],
            "NextToken": token,
        }

    def update_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        if cluster.status != "InService":
            raise AwsError(
                "ConflictException",
                f"Cluster {cluster.name} is in {cluster.status} status; it can be updated only "
                "when InService.",
            )
        orchestrator = p.get("Orchestrator")
        if orchestrator is not None and orchestrator != cluster.config.get("Orchestrator"):
            raise AwsError(
                "ValidationException", "The orchestrator of a cluster cannot be changed."
            )
        to_delete = list(p.get("InstanceGroupsToDelete") or [])
        for name in to_delete:
            if name not in cluster.groups:
                raise AwsError("ValidationException", f"Instance group {name} does not exist.")
        specs = p.get("InstanceGroups") or []
        vpc = cluster.config.get("VpcConfig")
        placements: dict[str, list[Placement]] = {}
        deltas: dict[str, int] = {}
        for spec in specs:
            self._check_group_spec(spec)
            existing = cluster.groups.get(spec["InstanceGroupName"])
            if existing is not None and existing.instance_type != spec["InstanceType"]:
                raise AwsError(
                    "ValidationException",
                    f"The instance type of instance group {existing.name} cannot be changed.",
                )
            if spec["InstanceGroupName"] in to_delete:
                raise AwsError(
                    "ValidationException",
                    f"Instance group {spec['InstanceGroupName']} cannot be updated and deleted at once.",
                )
            placements[spec["InstanceGroupName"]] = self._group_placements(vpc, spec)
            current = existing.target if existing is not None else 0
            self._check_plan_capacity(spec, current)
            if not spec.get("TrainingPlanArn"):
                deltas[spec["InstanceType"]] = (
                    deltas.get(spec["InstanceType"], 0) + spec["InstanceCount"] - current
                )
        for instance_type, delta in deltas.items():
            self._check_quota(instance_type, delta)
        auto_scaling = p.get("AutoScaling")
        role = p.get("ClusterRole", cluster.config.get("ClusterRole"))
        if auto_scaling and auto_scaling.get("Mode") == "Enable" and not role:
            raise AwsError("ValidationException", "AutoScaling requires a ClusterRole.")
        self._check_role(p.get("ClusterRole"), "Cluster role")

        for key in ("NodeRecovery", "TieredStorageConfig", "ClusterRole", "NodeProvisioningMode"):
            if p.get(key) is not None:
                cluster.config[key] = p[key]
        if auto_scaling is not None:
            cluster.auto_scaling = self._auto_scaling(auto_scaling)
        cluster.status = "Updating"
        cluster.failure_message = None
        cluster.gen += 1
        previous: dict[str, tuple[dict[str, Any], int] | None] = {}
        added: dict[str, list[Node]] = {}
        for spec in specs:
            name = spec["InstanceGroupName"]
            group = cluster.groups.get(name)
            previous[name] = (dict(group.spec), group.target) if group is not None else None
            if group is None:
                group = Group(spec=dict(spec), target=0, status="Creating")
                cluster.groups[name] = group
            else:
                group.spec = dict(spec)
                group.status = "Updating"
            count = spec["InstanceCount"]
            nodes = sorted(
                (n for n in cluster.nodes.values() if n.group == name), key=lambda n: n.launch_time
            )
            if count > len(nodes):
                added[name] = [
                    self._new_node(cluster, group, placements[name], index)
                    for index in range(len(nodes), count)
                ]
            for node in nodes[count:]:
                self._set_status(cluster, node, "ShuttingDown")
            group.target = count
        for name in to_delete:
            cluster.groups[name].status = "Deleting"
            for node in [n for n in cluster.nodes.values() if n.group == name]:
                self._set_status(cluster, node, "ShuttingDown")
        self._changed(cluster)
        self._grant_node_roles(cluster)
        if self._continuous(cluster):
            self._update_continuously(cluster, added, to_delete)
            return {"ClusterArn": cluster.arn}
        self._event(cluster, "Cluster update started.")
        self._cluster_later(
            cluster,
            self.ctx.profile.hyperpod_update,
            lambda: self._finish_update(cluster, previous, added, to_delete),
        )
        return {"ClusterArn": cluster.arn}

    def _update_continuously(
        self, cluster: Cluster, added: dict[str, list[Node]], deleted: list[str]
    ) -> None:
        """Continuous mode: the cluster and its groups stay InService while nodes come and go."""
        cluster.status = "InService"
        for group in cluster.groups.values():
            if group.name not in deleted:
                group.status = "InService"
        for name, nodes in added.items():
            self._boot_later(cluster, cluster.groups[name], nodes)

        def settle() -> None:
            for node in [n for n in cluster.nodes.values() if n.status == "ShuttingDown"]:
                self._remove_node(cluster, node)
            for name in deleted:
                cluster.groups.pop(name, None)
            self._auto_scaling_in_service(cluster)

        self._event(cluster, "Cluster update accepted (continuous provisioning).")
        self._cluster_later(cluster, self.ctx.profile.hyperpod_delete, settle, same_operation=False)

    def _finish_update(
        self,
        cluster: Cluster,
        previous: dict[str, tuple[dict[str, Any], int] | None],
        added: dict[str, list[Node]],
        deleted: list[str],
    ) -> None:
        failures: list[str] = []
        for name, nodes in added.items():
            group = cluster.groups[name]
            message = self._shortfall(group, nodes)
            if message is None:
                for node in nodes:
                    self._bring_up(cluster, node)
                continue
            failures.append(message)
            self._event(cluster, message, "Error", "InstanceGroup", name)
            for node in nodes:
                self._remove_node(cluster, node)
            before = previous.get(name)
            if before is None:
                del cluster.groups[name]
            else:
                group.spec, group.target = before
        for node in [n for n in cluster.nodes.values() if n.status == "ShuttingDown"]:
            self._remove_node(cluster, node)
        for name in deleted:
            cluster.groups.pop(name, None)
        for group in cluster.groups.values():
            group.status = "InService"
        self._auto_scaling_in_service(cluster)
        cluster.status = "InService"
        if failures:
            cluster.failure_message = " ".join(failures)
            self._event(cluster, "Cluster update rolled back.", "Error")
        else:
            self._event(cluster, "Cluster update completed.")

    def delete_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        if cluster.status == "Deleting":
            raise AwsError("ConflictException", f"Cluster {cluster.name} is already being deleted.")
        cluster.status = "Deleting"
        cluster.gen += 1
        for node in cluster.nodes.values():
            self._set_status(cluster, node, "ShuttingDown")
        for group in cluster.groups.values():
            group.status = "Deleting"

        def gone() -> None:
            self.clusters.pop(cluster.cluster_id, None)
            self._changed(cluster)
            self._revoke_node_roles(cluster)

        self._cluster_later(cluster, self.ctx.profile.hyperpod_delete, gone)
        return {"ClusterArn": cluster.arn}
