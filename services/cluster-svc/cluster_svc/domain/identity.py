"""The cluster's IAM identities: the EKS control-plane role, the HyperPod execution role and the
IAM OIDC provider that lets service accounts assume roles (IRSA).

create: eks_role, execution_role (independent); oidc_provider after eks_cluster
delete: delete_oidc_provider, delete_roles

Both roles carry their permissions as inline policies written out here, not as attachments of
AWS-managed policies: the statements are visible and reviewable in one place, they cannot drift
when AWS revises a managed policy, and the simulated account has no AWS-managed policies to
attach. A role or provider is "created" when it carries this cluster's tags; delete removes only
those.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cluster_svc.domain.control_plane import recorded
from shared.contracts.commands import CreateCluster
from shared.errors import PermanentError
from shared.stages import Done, Stage, StageContext

MANAGED_BY = {"managed-by": "hyperpilot"}
CLUSTER_TAG = "hyperpilot:cluster"
ROLE_NAME_LIMIT = 64
# The thumbprint of the root CA of EKS's OIDC endpoints (EKS user guide, "Create an IAM OIDC
# provider"); used when the issuer's certificate chain cannot be read.
EKS_ROOT_CA_THUMBPRINT = "9e99a48a9960b14926bb7f3b02e22da2b0ab7280"
STS_AUDIENCE = "sts.amazonaws.com"
POLICY_NAME = "hyperpilot"
VERSION = "2012-10-17"


@dataclass(frozen=True)
class Role:
    name: str
    arn: str
    trust: Mapping[str, Any]
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class OidcProvider:
    arn: str
    url: str  # without the scheme, as IAM stores it
    client_ids: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)


class Iam(Protocol):
    """What the identity stages need from IAM. Deletes of missing things return False."""

    async def role(self, name: str) -> Role | None: ...
    async def create_role(
        self, name: str, trust: Mapping[str, Any], description: str, tags: Mapping[str, str]
    ) -> Role: ...
    async def update_trust(self, name: str, trust: Mapping[str, Any]) -> None: ...
    async def inline_policy(self, role: str, policy: str) -> dict[str, Any] | None: ...
    async def inline_policy_names(self, role: str) -> list[str]: ...
    async def put_inline_policy(
        self, role: str, policy: str, document: Mapping[str, Any]
    ) -> None: ...
    async def delete_inline_policy(self, role: str, policy: str) -> bool: ...
    async def attached_policy_arns(self, role: str) -> list[str]: ...
    async def detach_policy(self, role: str, policy_arn: str) -> bool: ...
    async def delete_role(self, name: str) -> bool: ...
    async def oidc_provider(self, url: str) -> OidcProvider | None: ...
    async def create_oidc_provider(
        self, url: str, client_ids: list[str], thumbprints: list[str], tags: Mapping[str, str]
    ) -> str: ...
    async def add_client_id(self, arn: str, client_id: str) -> None: ...
    async def delete_oidc_provider(self, arn: str) -> bool: ...
    async def issuer_thumbprint(self, issuer_url: str) -> str | None: ...


# ---- names and documents ----------------------------------------------------------------------


def role_name(cluster: str, suffix: str) -> str:
    """`hyperpilot-<cluster>-<suffix>`, kept within IAM's 64 characters by shortening the
    cluster name and adding a short hash of it (so two long names never collide)."""
    name = f"hyperpilot-{cluster}-{suffix}"
    if len(name) <= ROLE_NAME_LIMIT:
        return name
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
    room = ROLE_NAME_LIMIT - len(f"hyperpilot--{digest}-{suffix}")
    return f"hyperpilot-{cluster[:room]}-{digest}-{suffix}"


def trust_policy(service: str, actions: tuple[str, ...] = ("sts:AssumeRole",)) -> dict[str, Any]:
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": service},
                "Action": list(actions),
            }
        ],
    }


def eks_cluster_policy() -> dict[str, Any]:
    """The statements of AWS's AmazonEKSClusterPolicy, written out: what the control plane does
    with EC2 (volumes, routes, groups, network interfaces), load balancers and KMS."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "ControlPlane",
                "Effect": "Allow",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:UpdateAutoScalingGroup",
                    "ec2:AttachVolume",
                    "ec2:AuthorizeSecurityGroupIngress",
                    "ec2:CreateRoute",
                    "ec2:CreateSecurityGroup",
                    "ec2:CreateTags",
                    "ec2:CreateVolume",
                    "ec2:DeleteRoute",
                    "ec2:DeleteSecurityGroup",
                    "ec2:DeleteVolume",
                    "ec2:DescribeAccountAttributes",
                    "ec2:DescribeAddresses",
                    "ec2:DescribeAvailabilityZones",
                    "ec2:DescribeDhcpOptions",
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceTopology",
                    "ec2:DescribeInternetGateways",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeRouteTables",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeVolumes",
                    "ec2:DescribeVolumesModifications",
                    "ec2:DescribeVpcs",
                    "ec2:DetachVolume",
                    "ec2:ModifyInstanceAttribute",
                    "ec2:ModifyVolume",
                    "ec2:RevokeSecurityGroupIngress",
                    "elasticloadbalancing:AddTags",
                    "elasticloadbalancing:ApplySecurityGroupsToLoadBalancer",
                    "elasticloadbalancing:AttachLoadBalancerToSubnets",
                    "elasticloadbalancing:ConfigureHealthCheck",
                    "elasticloadbalancing:CreateListener",
                    "elasticloadbalancing:CreateLoadBalancer",
                    "elasticloadbalancing:CreateLoadBalancerListeners",
                    "elasticloadbalancing:CreateLoadBalancerPolicy",
                    "elasticloadbalancing:CreateTargetGroup",
                    "elasticloadbalancing:DeleteListener",
                    "elasticloadbalancing:DeleteLoadBalancer",
                    "elasticloadbalancing:DeleteLoadBalancerListeners",
                    "elasticloadbalancing:DeleteTargetGroup",
                    "elasticloadbalancing:DeregisterInstancesFromLoadBalancer",
                    "elasticloadbalancing:DeregisterTargets",
                    "elasticloadbalancing:DescribeListeners",
                    "elasticloadbalancing:DescribeLoadBalancerAttributes",
                    "elasticloadbalancing:DescribeLoadBalancerPolicies",
                    "elasticloadbalancing:DescribeLoadBalancers",
                    "elasticloadbalancing:DescribeTargetGroupAttributes",
                    "elasticloadbalancing:DescribeTargetGroups",
                    "elasticloadbalancing:DescribeTargetHealth",
                    "elasticloadbalancing:DetachLoadBalancerFromSubnets",
                    "elasticloadbalancing:ModifyListener",
                    "elasticloadbalancing:ModifyLoadBalancerAttributes",
                    "elasticloadbalancing:ModifyTargetGroup",
                    "elasticloadbalancing:ModifyTargetGroupAttributes",
                    "elasticloadbalancing:RegisterInstancesWithLoadBalancer",
                    "elasticloadbalancing:RegisterTargets",
                    "elasticloadbalancing:SetLoadBalancerPoliciesForBackendServer",
                    "elasticloadbalancing:SetLoadBalancerPoliciesOfListener",
                    "kms:DescribeKey",
                ],
                "Resource": "*",
            },
            {
                "Sid": "LoadBalancerServiceLinkedRole",
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}
                },
            },
            {
                "Sid": "ControlPlaneNetworkInterfaces",
                "Effect": "Allow",
                "Action": [
                    "ec2:CreateNetworkInterface",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DetachNetworkInterface",
                    "ec2:ModifyNetworkInterfaceAttribute",
                ],
                "Resource": "*",
            },
        ],
    }


def _arn_parts(role_arn: str) -> tuple[str, str]:
    """(partition, account) of an IAM ARN: arn:<partition>:iam::<account>:role/<name>."""
    parts = role_arn.split(":")
    return parts[1], parts[4]


def execution_policy(
    *, bucket: str, region: str, role_arn: str, eks_cluster: str
) -> dict[str, Any]:
    """Least privilege for HyperPod nodes: pull images, read the cluster bucket (lifecycle
    scripts, shared data), write logs and metrics, manage the nodes' network interfaces, and
    describe (and authenticate to) their EKS cluster."""
    partition, account = _arn_parts(role_arn)
    cluster_arn = f"arn:{partition}:eks:{region}:{account}:cluster/{eks_cluster}"
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "PullImages",
                "Effect": "Allow",
                "Action": [
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetAuthorizationToken",
                    "ecr:GetDownloadUrlForLayer",
                ],
                "Resource": "*",
            },
            {
                "Sid": "ListClusterBucket",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": f"arn:{partition}:s3:::{bucket}",
            },
            {
                "Sid": "ReadClusterBucket",
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": f"arn:{partition}:s3:::{bucket}/*",
            },
            {
                "Sid": "WriteLogs",
                "Effect": "Allow",
                "Action": [
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:DescribeLogStreams",
                    "logs:PutLogEvents",
                ],
                "Resource": f"arn:{partition}:logs:{region}:{account}:log-group:/aws/sagemaker/*",
            },
            {
                "Sid": "PutMetrics",
                "Effect": "Allow",
                "Action": "cloudwatch:PutMetricData",
                "Resource": "*",
            },
            {
                "Sid": "NodeNetworkInterfaces",
                "Effect": "Allow",
                "Action": [
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:AttachNetworkInterface",
                    "ec2:CreateNetworkInterface",
                    "ec2:CreateNetworkInterfacePermission",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DeleteNetworkInterfacePermission",
                    "ec2:DescribeInstances",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeTags",
                    "ec2:DescribeVpcs",
                    "ec2:DetachNetworkInterface",
                    "ec2:ModifyNetworkInterfaceAttribute",
                    "ec2:UnassignPrivateIpAddresses",
                ],
                "Resource": "*",
            },
            {
                "Sid": "TagNetworkInterfaces",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": f"arn:{partition}:ec2:*:*:network-interface/*",
            },
            {
                "Sid": "JoinEksCluster",
                "Effect": "Allow",
                "Action": ["eks:DescribeCluster", "eks-auth:AssumeRoleForPodIdentity"],
                "Resource": cluster_arn,
            },
        ],
    }


def cluster_tags(cluster: str, user: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**(user or {}), **MANAGED_BY, CLUSTER_TAG: cluster}


def is_ours(tags: Mapping[str, str], cluster: str) -> bool:
    """Tagged as made by Hyperpilot for this cluster."""
    return tags.get(CLUSTER_TAG) == cluster and tags.get("managed-by") == "hyperpilot"


def same_document(a: Mapping[str, Any] | None, b: Mapping[str, Any]) -> bool:
    """The same JSON document (a policy or a trust), key order aside."""
    return a is not None and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# ---- roles ------------------------------------------------------------------------------------


async def ensure_role(
    iam: Iam,
    *,
    name: str,
    cluster: str,
    service: str,
    trust_actions: tuple[str, ...],
    description: str,
    user_tags: Mapping[str, str],
    policy: Callable[[str], dict[str, Any]],
) -> Done:
    """The role with exactly this trust and inline policy; `policy` maps the role's ARN to the
    document (the execution policy names the account). A same-named role Hyperpilot did not make
    is refused rather than taken over."""
    trust = trust_policy(service, trust_actions)
    role = await iam.role(name)
    changed = False
    if role is not None and not is_ours(role.tags, cluster):
        raise PermanentError(
            "RoleNameTaken",
            f"IAM role {name} exists and was not made by Hyperpilot for cluster {cluster}",
            f"delete or rename role {name}, or create the cluster under another name",
        )
    if role is None:
        role = await iam.create_role(name, trust, description, cluster_tags(cluster, user_tags))
        changed = True
    elif not same_document(role.trust, trust):
        await iam.update_trust(name, trust)
        changed = True
    document = policy(role.arn)
    if not same_document(await iam.inline_policy(name, POLICY_NAME), document):
        await iam.put_inline_policy(name, POLICY_NAME, document)
        changed = True
    return Done({"role_arn": role.arn, "role_name": name, "created": True}, noop=not changed)


def create_stages(iam: Iam) -> list[Stage]:
    """`eks_role`, `execution_role` and `oidc_provider` (docs/cluster-lifecycle.md); the last
    needs `eks_cluster`, which the control-plane area provides."""

    async def eks_role(ctx: StageContext[CreateCluster]) -> Done:
        spec = ctx.cmd.spec
        return await ensure_role(
            iam,
            name=role_name(spec.name, "eks"),
            cluster=spec.name,
            service="eks.amazonaws.com",
            trust_actions=("sts:AssumeRole", "sts:TagSession"),
            description=f"EKS control plane of Hyperpilot cluster {spec.name}",
            user_tags=spec.tags,
            policy=lambda _arn: eks_cluster_policy(),
        )

    async def execution_role(ctx: StageContext[CreateCluster]) -> Done:
        cmd = ctx.cmd
        return await ensure_role(
            iam,
            name=role_name(cmd.spec.name, "exec"),
            cluster=cmd.spec.name,
            service="sagemaker.amazonaws.com",
            trust_actions=("sts:AssumeRole",),
            description=f"HyperPod nodes of Hyperpilot cluster {cmd.spec.name}",
            user_tags=cmd.spec.tags,
            policy=lambda arn: execution_policy(
                bucket=cmd.bucket, region=cmd.region, role_arn=arn, eks_cluster=cmd.spec.name
            ),
        )

    async def oidc_provider(ctx: StageContext[CreateCluster]) -> Done:
        spec = ctx.cmd.spec
        issuer = str(ctx.output("eks_cluster", "oidc_issuer"))
        return await ensure_oidc_provider(iam, issuer, spec.name, spec.tags)

    return [
        Stage("eks_role", "Create the EKS cluster role", eks_role),
        Stage("execution_role", "Create the HyperPod execution role", execution_role),
        Stage(
            "oidc_provider",
            "Register the cluster's OIDC issuer with IAM",
            oidc_provider,
            needs=("eks_cluster",),
        ),
    ]


async def ensure_oidc_provider(
    iam: Iam, issuer: str, cluster: str, user_tags: Mapping[str, str]
) -> Done:
    """The IAM OIDC provider of the cluster's issuer, accepting STS as audience. One that already
    exists for the issuer (made by eksctl, say) is used and not recorded as created."""
    url = issuer.removeprefix("https://")
    provider = await iam.oidc_provider(url)
    if provider is not None:
        changed = STS_AUDIENCE not in provider.client_ids
        if changed:
            await iam.add_client_id(provider.arn, STS_AUDIENCE)
        return Done(
            {"provider_arn": provider.arn, "created": is_ours(provider.tags, cluster)},
            noop=not changed,
        )
    thumbprint = await iam.issuer_thumbprint(issuer) or EKS_ROOT_CA_THUMBPRINT
    arn = await iam.create_oidc_provider(
        url, [STS_AUDIENCE], [thumbprint], cluster_tags(cluster, user_tags)
    )
    return Done({"provider_arn": arn, "created": True})


# ---- delete -----------------------------------------------------------------------------------


async def remove_role(iam: Iam, name: str) -> bool:
    """Inline policies deleted and managed ones detached first, as IAM requires."""
    for policy in await iam.inline_policy_names(name):
        await iam.delete_inline_policy(name, policy)
    for policy_arn in await iam.attached_policy_arns(name):
        await iam.detach_policy(name, policy_arn)
    return await iam.delete_role(name)


def delete_stage_names() -> list[str]:
    """For composing cross-area needs: `delete_oidc_provider` after the EKS cluster is gone,
    `delete_roles` after HyperPod and EKS are gone."""
    return ["delete_oidc_provider", "delete_roles"]


def delete_stages(iam: Iam) -> list[Stage]:
    """Delete what the create operation recorded as created; needs on other areas' stages are
    added by whoever composes the workflow."""

    async def delete_oidc_provider(ctx: StageContext[Any]) -> Done:
        outputs = recorded(ctx, "oidc_provider")
        arn = outputs.get("provider_arn")
        if not outputs.get("created") or not arn:
            return Done(noop=True)
        deleted = await iam.delete_oidc_provider(arn)
        return Done({"deleted": [arn] if deleted else []}, noop=not deleted)

    async def delete_roles(ctx: StageContext[Any]) -> Done:
        deleted = []
        for stage in ("eks_role", "execution_role"):
            outputs = recorded(ctx, stage)
            name = outputs.get("role_name")
            if outputs.get("created") and name and await remove_role(iam, name):
                deleted.append(name)
        return Done({"deleted": deleted}, noop=not deleted)

    return [
        Stage("delete_oidc_provider", "Delete the IAM OIDC provider", delete_oidc_provider),
        Stage("delete_roles", "Delete the cluster's IAM roles", delete_roles),
    ]
