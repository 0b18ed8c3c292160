"""Decisions of the identity stages, against an in-memory IAM."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_svc.domain import identity
from cluster_svc.domain.identity import (
    EKS_ROOT_CA_THUMBPRINT,
    POLICY_NAME,
    execution_policy,
    role_name,
)
from shared.errors import PermanentError
from tests.cluster_network.fakes import FakeIam
from tests.cluster_network.helpers import by_name, create_command, delete_command, drive

ISSUER = "https://oidc.eks.us-east-1.amazonaws.com/id/ABCDEF0123456789"
EKS_OUTPUTS = {"eks_cluster": {"oidc_issuer": ISSUER}}


async def create_all(iam: FakeIam, command: dict[str, Any]) -> dict[str, dict[str, Any]]:
    stages = by_name(identity.create_stages(iam))
    outputs: dict[str, dict[str, Any]] = {}
    for name in ("eks_role", "execution_role", "oidc_provider"):
        outputs[name] = (await drive(stages[name], command, EKS_OUTPUTS)).outputs
    return outputs


def test_role_names_fit_iam_and_long_names_stay_distinct() -> None:
    assert role_name("llm", "eks") == "hyperpilot-llm-eks"
    long_a, long_b = "a" * 60 + "x", "a" * 60 + "y"
    name_a, name_b = role_name(long_a, "exec"), role_name(long_b, "exec")
    assert len(name_a) == 64 and len(name_b) == 64
    assert name_a != name_b
    assert name_a.startswith("hyperpilot-aaaa") and name_a.endswith("-exec")


def test_execution_policy_is_scoped_to_the_bucket_account_and_cluster() -> None:
    policy = execution_policy(
        bucket="data-b",
        region="eu-west-1",
        role_arn="arn:aws:iam::210987654321:role/hyperpilot-c-exec",
        eks_cluster="c",
    )
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    assert by_sid["ListClusterBucket"]["Resource"] == "arn:aws:s3:::data-b"
    assert by_sid["ReadClusterBucket"]["Resource"] == "arn:aws:s3:::data-b/*"
    assert by_sid["ReadClusterBucket"]["Action"] == "s3:GetObject"
    assert by_sid["JoinEksCluster"]["Resource"] == ("arn:aws:eks:eu-west-1:210987654321:cluster/c")
    assert by_sid["WriteLogs"]["Resource"].startswith("arn:aws:logs:eu-west-1:210987654321:")
    assert "ecr:BatchGetImage" in by_sid["PullImages"]["Action"]
    assert "ec2:CreateNetworkInterface" in by_sid["NodeNetworkInterfaces"]["Action"]
    actions = [
        a
        for s in policy["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]
    assert not any(a.endswith(":*") or a == "*" for a in actions)
    assert not any(a.startswith("s3:Put") or a.startswith("s3:Delete") for a in actions)


async def test_roles_are_made_with_their_trust_and_inline_policy_then_left_alone() -> None:
    iam = FakeIam()
    command = create_command("llm")
    outputs = await create_all(iam, command)
    eks = iam.roles["hyperpilot-llm-eks"]
    execution = iam.roles["hyperpilot-llm-exec"]
    assert eks.trust["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com"}
    assert execution.trust["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert outputs["eks_role"] == {
        "role_arn": eks.arn,
        "role_name": "hyperpilot-llm-eks",
        "created": True,
    }
    document = iam.policies["hyperpilot-llm-exec"][POLICY_NAME]
    assert "arn:aws:s3:::hyperpilot-llm-data" in str(document)
    assert iam.roles["hyperpilot-llm-eks"].tags["hyperpilot:cluster"] == "llm"

    before = iam.mutations()
    again = await create_all(iam, command)
    assert iam.mutations() == before
    assert again == outputs


async def test_drifted_trust_and_policy_are_put_back() -> None:
    iam = FakeIam()
    command = create_command("llm")
    await create_all(iam, command)
    await iam.update_trust("hyperpilot-llm-exec", {"Version": "2012-10-17", "Statement": []})
    iam.policies["hyperpilot-llm-exec"][POLICY_NAME] = {"Statement": []}
    stage = by_name(identity.create_stages(iam))["execution_role"]
    result = await drive(stage, command)
    assert not result.noop
    trust = iam.roles["hyperpilot-llm-exec"].trust
    assert trust["Statement"][0]["Principal"]["Service"] == "sagemaker.amazonaws.com"
    assert iam.policies["hyperpilot-llm-exec"][POLICY_NAME]["Statement"]


async def test_a_role_of_the_same_name_not_made_for_this_cluster_is_refused() -> None:
    iam = FakeIam()
    await iam.create_role("hyperpilot-llm-eks", {}, "theirs", {"owner": "someone"})
    stage = by_name(identity.create_stages(iam))["eks_role"]
    with pytest.raises(PermanentError) as err:
        await drive(stage, create_command("llm"))
    assert err.value.code == "RoleNameTaken" and err.value.hint


async def test_oidc_provider_uses_the_issuers_thumbprint_or_the_eks_root() -> None:
    iam = FakeIam(thumbprint="ab" * 20)
    outputs = await create_all(iam, create_command("llm"))
    provider = iam.providers[outputs["oidc_provider"]["provider_arn"]]
    assert provider.url == ISSUER.removeprefix("https://")
    assert provider.client_ids == ("sts.amazonaws.com",)
    assert iam.last_thumbprints == ["ab" * 20]

    unreachable = FakeIam(thumbprint=None)
    await create_all(unreachable, create_command("llm"))
    assert unreachable.last_thumbprints == [EKS_ROOT_CA_THUMBPRINT]


async def test_an_existing_provider_for_the_issuer_is_used_not_claimed() -> None:
    iam = FakeIam()
    url = ISSUER.removeprefix("https://")
    arn = await iam.create_oidc_provider(url, ["other"], ["00" * 20], {"by": "eksctl"})
    outputs = await create_all(iam, create_command("llm"))
    assert outputs["oidc_provider"] == {"provider_arn": arn, "created": False}
    assert "sts.amazonaws.com" in iam.providers[arn].client_ids

    delete = delete_command("llm", outputs)
    for stage in identity.delete_stages(iam):
        await drive(stage, delete)
    assert arn in iam.providers  # not ours: left in place
    assert not iam.roles


async def test_delete_removes_inline_and_attached_policies_before_the_role() -> None:
    iam = FakeIam()
    outputs = await create_all(iam, create_command("llm"))
    iam.attached["hyperpilot-llm-eks"] = ["arn:aws:iam::aws:policy/ReadOnlyAccess"]
    delete = delete_command("llm", outputs)
    results = {s.name: await drive(s, delete) for s in identity.delete_stages(iam)}
    assert not iam.roles and not iam.providers
    assert sorted(results["delete_roles"].outputs["deleted"]) == [
        "hyperpilot-llm-eks",
        "hyperpilot-llm-exec",
    ]
    again = [await drive(s, delete) for s in identity.delete_stages(iam)]
    assert all(r.noop for r in again)


def test_stage_graph_of_the_identity_area() -> None:
    create = {s.name: s.needs for s in identity.create_stages(FakeIam())}
    assert create == {"eks_role": (), "execution_role": (), "oidc_provider": ("eks_cluster",)}
    deletes = identity.delete_stages(FakeIam())
    assert [s.name for s in deletes] == identity.delete_stage_names()
    assert all(not s.needs for s in deletes)
