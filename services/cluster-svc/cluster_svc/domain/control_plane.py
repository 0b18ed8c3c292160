"""The cluster's bucket, its EKS control plane and who may use it: create and delete stages.

create: bucket; eks_cluster (needs network, security_group, eks_role) -> access_entries
        (needs eks_cluster, execution_role)
delete: delete_eks (after HyperPod and the add-ons are gone); delete_bucket (last)

Every stage reads actual state first. A resource found with Hyperpilot's tags for this cluster
is adopted (a crash between the create call and the persist left it); one found without them
belongs to someone else and is never touched, so `created` lists only what Hyperpilot made.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from cluster_svc.domain import lifecycle
from cluster_svc.domain.storage import BucketStore
from shared.contracts.cluster import ClusterSpec
from shared.contracts.commands import CreateCluster, DeleteCluster
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted

MANAGED_BY_KEY = "managed-by"
MANAGED_BY = "hyperpilot"
CLUSTER_KEY = "hyperpilot-cluster"
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# HyperPod nodes join EKS through an access entry of this type (no access policies allowed).
HYPERPOD_ENTRY_TYPE = "HYPERPOD_LINUX"


# ---- tags and recorded resources ---------------------------------------------------------


def resource_tags(spec: ClusterSpec) -> dict[str, str]:
    """The tags of everything made for `spec`: the user's, then Hyperpilot's (which win)."""
    return {**spec.tags, MANAGED_BY_KEY: MANAGED_BY, CLUSTER_KEY: spec.name}


def is_ours(tags: dict[str, str], cluster_name: str) -> bool:
    return tags.get(MANAGED_BY_KEY) == MANAGED_BY and tags.get(CLUSTER_KEY) == cluster_name


def recorded(ctx: StageContext[DeleteCluster], stage: str) -> dict[str, Any]:
    """What the create operation's `stage` output, as carried by DeleteCluster.resources."""
    resources = ctx.cmd.resources
    outputs = resources.get(stage) or {}
    return dict(outputs) if isinstance(outputs, dict) else {}


def elapsed_seconds(since: datetime | None) -> int:
    if since is None:
        return 0
    return max(0, int((datetime.now(UTC) - since).total_seconds()))


# ---- ports ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EksCluster:
    """What the stages read of an EKS cluster (DescribeCluster)."""

    name: str
    arn: str
    status: str  # CREATING | ACTIVE | DELETING | FAILED | UPDATING | PENDING
    tags: dict[str, str]
    created_at: datetime | None = None
    endpoint: str | None = None
    ca_data: str | None = None
    oidc_issuer: str | None = None
    health: str | None = None  # the health issues' messages, when there are any


class EksPort(Protocol):
    async def describe_cluster(self, name: str) -> EksCluster | None: ...
    async def create_cluster(self, request: dict[str, Any]) -> EksCluster: ...
    async def delete_cluster(self, name: str) -> None: ...
    async def caller_arn(self) -> str: ...
    async def access_entry_exists(self, cluster: str, principal_arn: str) -> bool: ...
    async def create_access_entry(
        self, cluster: str, principal_arn: str, entry_type: str, tags: dict[str, str]
    ) -> None: ...
    async def associated_policies(self, cluster: str, principal_arn: str) -> list[str]: ...
    async def associate_cluster_policy(
        self, cluster: str, principal_arn: str, policy_arn: str
    ) -> None: ...


class LifecycleBuckets(BucketStore, Protocol):
    """A bucket store that also reads tags and writes objects (the lifecycle script)."""

    async def tags(self, name: str) -> dict[str, str]: ...
    async def add_tags(self, name: str, tags: dict[str, str]) -> None: ...
    async def object_etag(self, name: str, key: str) -> str | None: ...
    async def put_object(
        self, name: str, key: str, body: bytes, content_type: str = ...
    ) -> None: ...


# ---- pure rules ----------------------------------------------------------------------------


def client_request_token(operation_id: uuid.UUID) -> str:
    """One token per operation: EKS answers a repeated CreateCluster with the first result."""
    return str(operation_id)


def eks_create_request(
    spec: ClusterSpec,
    *,
    subnet_ids: list[str],
    security_group_id: str,
    role_arn: str,
    token: str,
) -> dict[str, Any]:
    """EKS CreateCluster parameters; API_AND_CONFIG_MAP because HyperPod needs access entries."""
    return {
        "name": spec.name,
        "version": spec.kubernetes_version,
        "roleArn": role_arn,
        "resourcesVpcConfig": {
            "subnetIds": subnet_ids,
            "securityGroupIds": [security_group_id],
            "endpointPublicAccess": True,
            "endpointPrivateAccess": True,
        },
        "accessConfig": {
            "authenticationMode": "API_AND_CONFIG_MAP",
            "bootstrapClusterCreatorAdminPermissions": True,
        },
        "tags": resource_tags(spec),
        "clientRequestToken": token,
    }


def principal_arn(caller_arn: str) -> str:
    """The IAM principal an access entry takes: an assumed-role session becomes its role."""
    head, _, resource = caller_arn.partition(":assumed-role/")
    if not resource:
        return caller_arn
    partition, account = head.split(":")[1], head.split(":")[4]
    role = resource.split("/", 1)[0]
    return f"arn:{partition}:iam::{account}:role/{role}"


def admin_policy_arn(cluster_arn: str) -> str:
    partition = cluster_arn.split(":")[1] if cluster_arn.startswith("arn:") else "aws"
    return f"arn:{partition}:eks::aws:cluster-access-policy/{ADMIN_POLICY}"


def _cluster_outputs(cluster: EksCluster, created: bool) -> dict[str, Any]:
    return {
        "cluster_arn": cluster.arn,
        "cluster_name": cluster.name,
        "endpoint": cluster.endpoint,
        "ca_data": cluster.ca_data,
        "oidc_issuer": cluster.oidc_issuer,
        "created": created,
    }


def _not_ours(cluster: EksCluster, spec: ClusterSpec) -> PermanentError:
    return PermanentError(
        "EksClusterNameTaken",
        f"an EKS cluster named {cluster.name} already exists ({cluster.arn}) and was not created "
        f"by Hyperpilot for cluster {spec.name} (its tags lack {MANAGED_BY_KEY}={MANAGED_BY} and "
        f"{CLUSTER_KEY}={spec.name})",
        "choose another cluster name, or bring that EKS cluster in with the import command "
        "instead of creating one",
    )


def _failed(cluster: EksCluster) -> PermanentError:
    return PermanentError(
        "EksClusterFailed",
        f"EKS cluster {cluster.name} is FAILED" + (f": {cluster.health}" if cluster.health else ""),
        "check the cluster role's trust policy and the subnets' free addresses, then retry the "
        "operation: the failed cluster is deleted first",
    )


# ---- create --------------------------------------------------------------------------------


def create_stages(eks: EksPort, buckets: LifecycleBuckets) -> list[Stage]:
    async def bucket(ctx: StageContext[CreateCluster]) -> Done:
        cmd = ctx.cmd
        name, spec = cmd.bucket, cmd.spec
        changed = False
        if await buckets.exists(name):
            created = is_ours(await buckets.tags(name), spec.name)
        else:
            await buckets.create(name, cmd.region)
            created = changed = True
        if created:
            wanted = resource_tags(spec)
            current = await buckets.tags(name)
            if any(current.get(k) != v for k, v in wanted.items()):
                await buckets.add_tags(name, wanted)
                changed = True
        changed = await buckets.block_public_access(name) or changed
        changed = await buckets.encrypt(name) or changed
        if await buckets.object_etag(name, lifecycle.SCRIPT_KEY) != lifecycle.script_md5():
            await buckets.put_object(
                name, lifecycle.SCRIPT_KEY, lifecycle.script_body(), "text/x-shellscript"
            )
            changed = True
        outputs = {
            "bucket": name,
            "lifecycle_script_uri": lifecycle.source_uri(name),
            "created": created,
        }
        return Done(outputs, noop=not changed)

    async def eks_cluster(ctx: StageContext[CreateCluster]) -> Done | Submitted:
        spec = ctx.cmd.spec
        current = await eks.describe_cluster(spec.name)
        if current is None:
            request = eks_create_request(
                spec,
                subnet_ids=[
                    *ctx.output("network", "public_subnet_ids"),
                    *ctx.output("network", "private_subnet_ids"),
                ],
                security_group_id=ctx.output("security_group", "security_group_id"),
                role_arn=ctx.output("eks_role", "role_arn"),
                token=client_request_token(ctx.operation_id),
            )
            made = await eks.create_cluster(request)
            return Submitted(
                made.arn, {"cluster_arn": made.arn, "cluster_name": made.name, "created": True}
            )
        if not is_ours(current.tags, spec.name):
            raise _not_ours(current, spec)
        if current.status == "FAILED":
            await eks.delete_cluster(current.name)
            raise _failed(current)
        if current.status == "DELETING":
            raise PermanentError(
                "EksClusterDeleting",
                f"EKS cluster {current.name} is being deleted",
                "retry the operation once it is gone (a few minutes)",
            )
        if current.status in ("ACTIVE", "UPDATING"):
            return Done(_cluster_outputs(current, created=True), noop=True)
        return Submitted(
            current.arn, {"cluster_arn": current.arn, "cluster_name": current.name, "created": True}
        )

    async def eks_cluster_poll(ctx: StageContext[CreateCluster]) -> Done | Pending:
        name = ctx.own_outputs.get("cluster_name") or ctx.cmd.spec.name
        current = await eks.describe_cluster(name)
        if current is None:
            raise PermanentError(
                "EksClusterGone",
                f"EKS cluster {name} disappeared while it was being created",
                "retry the operation to create it again",
            )
        if current.status == "FAILED":
            raise _failed(current)
        if current.status in ("ACTIVE", "UPDATING"):
            return Done(_cluster_outputs(current, bool(ctx.own_outputs.get("created", True))))
        return Pending(
            f"EKS control plane {current.status} ({elapsed_seconds(current.created_at)} s)"
        )

    async def access_entries(ctx: StageContext[CreateCluster]) -> Done:
        cluster = ctx.output("eks_cluster", "cluster_name")
        cluster_arn = ctx.output("eks_cluster", "cluster_arn")
        spec = ctx.cmd.spec
        tags = resource_tags(spec)
        caller = principal_arn(await eks.caller_arn())
        execution_role = ctx.output("execution_role", "role_arn")
        changed = False
        if not await eks.access_entry_exists(cluster, caller):
            await eks.create_access_entry(cluster, caller, "STANDARD", tags)
            changed = True
        policy = admin_policy_arn(cluster_arn)
        if policy not in await eks.associated_policies(cluster, caller):
            await eks.associate_cluster_policy(cluster, caller, policy)
            changed = True
        if execution_role != caller and not await eks.access_entry_exists(cluster, execution_role):
            await eks.create_access_entry(cluster, execution_role, HYPERPOD_ENTRY_TYPE, tags)
            changed = True
        return Done({"principal_arns": [caller, execution_role]}, noop=not changed)

    return [
        Stage("bucket", "Create the S3 bucket and upload the lifecycle script", bucket),
        Stage(
            "eks_cluster",
            "Create the EKS control plane",
            eks_cluster,
            eks_cluster_poll,
            needs=("network", "security_group", "eks_role"),
        ),
        Stage(
            "access_entries",
            "Grant cluster access (access entries)",
            access_entries,
            needs=("eks_cluster", "execution_role"),
        ),
    ]


# ---- delete --------------------------------------------------------------------------------


def delete_stages(eks: EksPort, buckets: LifecycleBuckets) -> list[Stage]:
    async def delete_eks(ctx: StageContext[DeleteCluster]) -> Done | Submitted:
        made = recorded(ctx, "eks_cluster")
        if not made.get("created") or not made.get("cluster_name"):
            return Done(noop=True)
        current = await eks.describe_cluster(made["cluster_name"])
        if current is None:
            return Done(noop=True)
        if not is_ours(current.tags, ctx.cmd.name):
            raise PermanentError(
                "EksClusterNotOurs",
                f"EKS cluster {current.name} no longer carries Hyperpilot's tags for this cluster",
                "delete it yourself if it is no longer used; Hyperpilot leaves it alone",
            )
        if current.status != "DELETING":
            await eks.delete_cluster(current.name)
        return Submitted(current.arn, {"cluster_name": current.name})

    async def delete_eks_poll(ctx: StageContext[Any]) -> Done | Pending:
        name = ctx.own_outputs.get("cluster_name") or recorded(ctx, "eks_cluster")["cluster_name"]
        current = await eks.describe_cluster(name)
        if current is None:
            return Done({"deleted": name})
        return Pending(f"EKS control plane {current.status}")

    async def delete_bucket(ctx: StageContext[Any]) -> Done:
        made = recorded(ctx, "bucket")
        name = made.get("bucket")
        if not made.get("created") or not name or not await buckets.exists(name):
            return Done(noop=True)
        removed = await buckets.empty(name)
        await buckets.delete(name)
        return Done({"deleted": name, "objects_removed": removed})

    return [
        Stage(
            "delete_eks",
            "Delete the EKS control plane",
            delete_eks,
            delete_eks_poll,
            needs=("delete_hyperpod", "delete_dependencies"),
        ),
        Stage("delete_bucket", "Delete the S3 bucket", delete_bucket, needs=("delete_roles",)),
    ]
