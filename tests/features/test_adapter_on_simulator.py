"""The features adapter against the simulator: unmodified boto3 and the official Kubernetes
client. Reads of actual state, and steps whose effect is already there counting as done."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.features import LiveFeatures
from cluster_svc.adapters.ports import build_ports
from cluster_svc.domain.components.base import object_ref
from cluster_svc.domain.features.objects import (
    CERT_MANAGER,
    ROLE_ARN_ANNOTATION,
    TRAINING_ADDON,
    checkpoint_policy,
    checkpoint_service_account,
    checkpoint_trust,
    watched,
)
from cluster_svc.domain.features.steps import (
    Apply,
    Call,
    Remove,
    addon_steps,
    remove_role_steps,
    role_steps,
)
from shared.contracts.features import FeaturesChange, FeatureTarget, UpdateFeatures
from shared.errors import PermanentError
from sim.aws import SimulatedAws
from sim.testing import aws_client, wait_for
from tests.cluster_dependencies.conftest import REGION


@pytest.fixture(scope="module")
def live(sim: SimulatedAws) -> LiveFeatures:
    aws = AwsClients(REGION, sim.endpoint_url)
    return LiveFeatures(aws, build_ports(aws))


def update(eks: dict[str, Any]) -> UpdateFeatures:
    return UpdateFeatures(
        cluster=eks["name"],
        region=REGION,
        target=FeatureTarget(eks_cluster=eks["name"], hyperpod_cluster=None, bucket="b"),
        changes=FeaturesChange(training_operator=True),
    )


async def test_names_come_from_the_eks_cluster(live: LiveFeatures, eks: dict[str, Any]) -> None:
    names = await live.names(update(eks))
    assert names.account == eks["arn"].split(":")[4]
    assert names.oidc_url == eks["identity"]["oidc"]["issuer"].removeprefix("https://")
    assert names.access is not None and names.access.endpoint == eks["endpoint"]
    missing = update(eks).model_copy(
        update={"target": FeatureTarget(eks_cluster="no-such-cluster")}
    )
    with pytest.raises(PermanentError, match="does not exist"):
        await live.names(missing)


async def test_observe_reads_addons_objects_roles_and_no_hyperpod(
    live: LiveFeatures, eks: dict[str, Any]
) -> None:
    names = await live.names(update(eks))
    actual = await live.observe(names)
    assert actual.hyperpod is None
    assert {CERT_MANAGER, TRAINING_ADDON} <= set(actual.addons)
    assert all(status is None for status in actual.addons.values()), actual.addons
    assert actual.workspaces == {"amp": None, "grafana": None}
    assert set(actual.objects) == set(watched(names))
    assert all(v is None for v in actual.objects.values())
    assert actual.roles == {names.checkpoint_role: None, names.autoscaler_role: None}
    assert await live.hyperpod("no-such-hyperpod-cluster") is None


async def test_steps_run_and_a_repeated_step_is_harmless(
    live: LiveFeatures, eks: dict[str, Any], sim: SimulatedAws
) -> None:
    names = await live.names(update(eks))
    create = addon_steps(names, await live.observe(names), CERT_MANAGER)[0]
    assert isinstance(create, Call)
    await live.execute(names, create)
    await live.execute(names, create)  # ResourceInUse: already there
    calls = aws_client(sim, "eks")
    wait_for(
        lambda: (
            calls.describe_addon(clusterName=eks["name"], addonName="cert-manager")["addon"][
                "status"
            ]
            == "ACTIVE"
        ),
        timeout=10,
    )
    actual = await live.observe(names)
    assert actual.addons[CERT_MANAGER] == "ACTIVE"

    chain = role_steps(
        names,
        actual,
        names.checkpoint_role,
        checkpoint_trust(names),
        checkpoint_policy(names),
        "test",
    )
    for step in chain + chain[:1]:  # CreateRole twice: EntityAlreadyExists is done
        assert isinstance(step, Call)
        await live.execute(names, step)
    role = (await live.observe(names)).roles[names.checkpoint_role]
    assert role is not None and role.ours and role.policy == checkpoint_policy(names)

    account = checkpoint_service_account(names)
    await live.execute(names, Apply(account))
    seen = (await live.observe(names)).object(object_ref(account))
    assert seen is not None
    assert seen["metadata"]["annotations"][ROLE_ARN_ANNOTATION] == role.arn

    after = await live.observe(names)
    removal = [*remove_role_steps(after, names.checkpoint_role)]
    for step in [Remove(object_ref(account)), *removal, *removal]:
        await live.execute(names, step)  # the second removal finds nothing: done
    final = await live.observe(names)
    assert final.object(object_ref(account)) is None
    assert final.roles[names.checkpoint_role] is None
    with pytest.raises(ClientError):
        aws_client(sim, "iam").get_role(RoleName=names.checkpoint_role)


async def test_update_cluster_of_a_missing_cluster_fails_with_aws_words(
    live: LiveFeatures, eks: dict[str, Any]
) -> None:
    names = await live.names(update(eks))
    with pytest.raises(PermanentError) as error:
        await live.execute(
            names,
            Call("sagemaker", "UpdateCluster", {"ClusterName": "no-such-hyperpod-cluster"}),
        )
    assert error.value.code in ("ResourceNotFound", "ValidationException")
