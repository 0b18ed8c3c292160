"""What an adoption reads of an existing EKS cluster (and the one setting it may change), through
boto3: DescribeCluster, ListNodegroups/DescribeNodegroup, ListAddons/DescribeAddon,
ListAccessEntries/DescribeAccessEntry, SageMaker ListClusters/DescribeCluster (which HyperPod
cluster an EKS cluster orchestrates), IAM ListOpenIDConnectProviders, UpdateClusterConfig and
DescribeUpdate (EKS API reference)."""

from __future__ import annotations

from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.adoption import AddonView, EksView, NodegroupView
from shared.errors import PermanentError

NOT_FOUND = "ResourceNotFoundException"
MANAGED_BY = "managed-by"


class EksAdoption:
    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    async def _pages(self, service: str, operation: str, key: str, **params: Any) -> list[Any]:
        items: list[Any] = []
        while True:
            page = await self.aws.call(service, operation, **params)
            items += page.get(key) or []
            token = page.get("nextToken") or page.get("NextToken")
            if not token:
                return items
            params["NextToken" if service == "sagemaker" else "nextToken"] = token

    async def cluster(self, name: str) -> EksView | None:
        try:
            view = (await self.aws.call("eks", "describe_cluster", name=name))["cluster"]
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise
        vpc = view.get("resourcesVpcConfig") or {}
        return EksView(
            name=view["name"],
            arn=view["arn"],
            status=view.get("status", "CREATING"),
            version=str(view.get("version", "")),
            vpc_id=str(vpc.get("vpcId", "")),
            subnet_ids=tuple(vpc.get("subnetIds") or ()),
            security_group_ids=tuple(vpc.get("securityGroupIds") or ()),
            cluster_security_group_id=vpc.get("clusterSecurityGroupId"),
            authentication_mode=str(
                (view.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP"
            ),
            endpoint=view.get("endpoint"),
            ca_data=(view.get("certificateAuthority") or {}).get("data"),
            oidc_issuer=((view.get("identity") or {}).get("oidc") or {}).get("issuer"),
            tags=dict(view.get("tags") or {}),
        )

    async def nodegroups(self, cluster: str) -> list[NodegroupView]:
        names = await self._pages("eks", "list_nodegroups", "nodegroups", clusterName=cluster)
        result = []
        for name in sorted(names):
            group = (
                await self.aws.call(
                    "eks", "describe_nodegroup", clusterName=cluster, nodegroupName=name
                )
            )["nodegroup"]
            result.append(
                NodegroupView(
                    name=name,
                    status=str(group.get("status", "")),
                    instance_types=tuple(group.get("instanceTypes") or ()),
                    desired_size=int((group.get("scalingConfig") or {}).get("desiredSize", 0)),
                )
            )
        return result

    async def addons(self, cluster: str) -> list[AddonView]:
        names = await self._pages("eks", "list_addons", "addons", clusterName=cluster)
        result = []
        for name in sorted(names):
            addon = (
                await self.aws.call("eks", "describe_addon", clusterName=cluster, addonName=name)
            )["addon"]
            result.append(
                AddonView(
                    name=name,
                    version=str(addon.get("addonVersion", "")),
                    status=str(addon.get("status", "")),
                    managed=(addon.get("tags") or {}).get(MANAGED_BY) == "hyperpilot",
                )
            )
        return result

    async def access_entries(self, cluster: str) -> list[str]:
        return [
            str(a)
            for a in await self._pages(
                "eks", "list_access_entries", "accessEntries", clusterName=cluster
            )
        ]

    async def access_entry_tags(self, cluster: str, principal_arn: str) -> dict[str, str] | None:
        try:
            entry = await self.aws.call(
                "eks", "describe_access_entry", clusterName=cluster, principalArn=principal_arn
            )
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise
        return dict(entry["accessEntry"].get("tags") or {})

    async def delete_access_entry(self, cluster: str, principal_arn: str) -> bool:
        try:
            await self.aws.call(
                "eks", "delete_access_entry", clusterName=cluster, principalArn=principal_arn
            )
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return False
            raise
        return True

    async def hyperpod_clusters_on(self, eks_arn: str) -> list[str]:
        summaries = await self._pages("sagemaker", "list_clusters", "ClusterSummaries")
        found = []
        for summary in summaries:
            try:
                described = await self.aws.call(
                    "sagemaker", "describe_cluster", ClusterName=summary["ClusterName"]
                )
            except PermanentError as exc:
                if exc.code in ("ResourceNotFound", "ValidationException"):
                    continue  # deleted between the list and the describe
                raise
            orchestrator = (described.get("Orchestrator") or {}).get("Eks") or {}
            if orchestrator.get("ClusterArn") == eks_arn:
                found.append(str(described["ClusterName"]))
        return found

    async def oidc_provider_exists(self, issuer: str) -> bool:
        url = issuer.removeprefix("https://")
        providers = await self.aws.call("iam", "list_open_id_connect_providers")
        return any(
            str(p["Arn"]).endswith(f":oidc-provider/{url}")
            for p in providers.get("OpenIDConnectProviderList") or []
        )

    async def caller_arn(self) -> str:
        return str((await self.aws.call("sts", "get_caller_identity"))["Arn"])

    async def set_authentication_mode(self, cluster: str, mode: str) -> str:
        answer = await self.aws.call(
            "eks",
            "update_cluster_config",
            name=cluster,
            accessConfig={"authenticationMode": mode},
        )
        return str(answer["update"]["id"])

    async def update_status(self, cluster: str, update_id: str) -> tuple[str, str]:
        update = (await self.aws.call("eks", "describe_update", name=cluster, updateId=update_id))[
            "update"
        ]
        errors = "; ".join(
            f"{e.get('errorCode')}: {e.get('errorMessage')}" for e in update.get("errors") or []
        )
        return str(update.get("status", "")), errors
