"""EKS managed node groups: Create/Describe/List/Delete/UpdateNodegroupConfig."""

from __future__ import annotations

import uuid
from typing import Any

from sim.aws import moto_state
from sim.aws.eks.base import EksBase
from sim.aws.eks.model import EksCluster, page_of
from sim.aws.errors import AwsError


class NodegroupOps(EksBase):
    """Node group operations."""

    def create_nodegroup(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._active(p["clusterName"])
        name = p["nodegroupName"]
        if name in cluster.nodegroups:
            raise AwsError(
                "ResourceInUseException",
                f"NodeGroup already exists with name {name} and cluster name {cluster.name}",
            )
        self._check_role(p["nodeRole"], "Node role")
        for subnet_id in p["subnets"]:
            if moto_state.subnet(self.ctx.account_id, self.ctx.region, subnet_id) is None:
                raise AwsError(
                    "InvalidParameterException", f"The subnet ID '{subnet_id}' does not exist"
                )
        scaling = p.get("scalingConfig") or {"minSize": 1, "maxSize": 2, "desiredSize": 2}
        group = {
            "nodegroupName": name,
            "nodegroupArn": self.ctx.arn("eks", f"nodegroup/{cluster.name}/{name}/{uuid.uuid4()}"),
            "clusterName": cluster.name,
            "version": p.get("version") or cluster.spec["version"],
            "releaseVersion": p.get("releaseVersion") or f"{cluster.spec['version']}.0-20250101",
            "createdAt": self.ctx.now(),
            "modifiedAt": self.ctx.now(),
            "status": "CREATING",
            "capacityType": p.get("capacityType", "ON_DEMAND"),
            "scalingConfig": scaling,
            "instanceTypes": p.get("instanceTypes") or ["t3.medium"],
            "subnets": p["subnets"],
            "amiType": p.get("amiType", "AL2023_x86_64_STANDARD"),
            "nodeRole": p["nodeRole"],
            "labels": p.get("labels") or {},
            "taints": p.get("taints") or [],
            "diskSize": p.get("diskSize", 20),
            "health": {"issues": []},
            "updateConfig": p.get("updateConfig") or {"maxUnavailable": 1},
            "tags": p.get("tags") or {},
            "resources": {"autoScalingGroups": [{"name": f"eks-{name}-{uuid.uuid4().hex[:8]}"}]},
        }
        cluster.nodegroups[name] = group

        def ready() -> None:
            if cluster.nodegroups.get(name) is group and group["status"] == "CREATING":
                group["status"] = "ACTIVE"
                self.ctx.nodes_changed(cluster.name)  # its nodes join the cluster

        self._later(self.ctx.profile.node_boot, ready)
        return {"nodegroup": group}

    def _nodegroup(self, p: dict[str, Any]) -> tuple[EksCluster, dict[str, Any]]:
        cluster = self._get(p["clusterName"])
        group = cluster.nodegroups.get(p["nodegroupName"])
        if group is None:
            raise AwsError(
                "ResourceNotFoundException", f"No node group found for name: {p['nodegroupName']}."
            )
        return cluster, group

    def describe_nodegroup(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"nodegroup": self._nodegroup(p)[1]}

    def list_nodegroups(self, p: dict[str, Any]) -> dict[str, Any]:
        names, token = page_of(sorted(self._get(p["clusterName"]).nodegroups), p)
        return {"nodegroups": names, "nextToken": token}

    def delete_nodegroup(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, group = self._nodegroup(p)
        group["status"] = "DELETING"

        def gone() -> None:
            if cluster.nodegroups.get(group["nodegroupName"]) is group:
                del cluster.nodegroups[group["nodegroupName"]]
                self.ctx.nodes_changed(cluster.name)  # its nodes leave the cluster

        self._later(self.ctx.profile.eks_delete, gone)
        return {"nodegroup": group}

    def update_nodegroup_config(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, group = self._nodegroup(p)
        if group["status"] != "ACTIVE":
            raise AwsError(
                "ResourceInUseException", f"Nodegroup {group['nodegroupName']} is {group['status']}"
            )
        scaling = p.get("scalingConfig")
        group["status"] = "UPDATING"

        def apply() -> None:
            if scaling:
                group["scalingConfig"] = {**group["scalingConfig"], **scaling}
            if p.get("labels"):
                labels = dict(group["labels"])
                labels.update(p["labels"].get("addOrUpdateLabels") or {})
                for key in p["labels"].get("removeLabels") or []:
                    labels.pop(key, None)
                group["labels"] = labels
            group["status"] = "ACTIVE"
            group["modifiedAt"] = self.ctx.now()
            self.ctx.nodes_changed(cluster.name)  # its nodes follow the new size and labels

        params = [
            {"type": k[0].upper() + k[1:], "value": str(v)} for k, v in (scaling or {}).items()
        ]
        update: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "status": "InProgress",
            "type": "ConfigUpdate",
            "params": params,
            "createdAt": self.ctx.now(),
            "errors": [],
        }
        cluster.updates[update["id"]] = update

        def done() -> None:
            apply()
            update["status"] = "Successful"

        self._later(self.ctx.profile.node_boot, done)
        return {"update": update}
