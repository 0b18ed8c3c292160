"""The features domain with fakes: the steps each feature decides from actual state, the diff,
the plan, the rules, and the level-triggered passes of the workflow's stages."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace

import pytest
from pydantic import ValidationError

from cluster_svc.domain.components.base import object_ref
from cluster_svc.domain.features.actual import RoleActual, inference_enabled
from cluster_svc.domain.features.objects import (
    FEATURES,
    KARPENTER_CRDS,
    TRAINING_ADDON,
    autoscaler_policy,
    autoscaler_trust,
    crd_ref,
    inference_objects,
)
from cluster_svc.domain.features.plan import describe, plan
from cluster_svc.domain.features.stages import advance, update_features_workflow
from cluster_svc.domain.features.steps import (
    Apply,
    Call,
    Remove,
    Step,
    Wait,
    feature_steps,
    until_wait,
)
from shared.contracts.features import FeaturesChange
from shared.errors import PermanentError
from shared.stages import Done, StageContext
from tests.features.fakes import PROVIDER_ARN, FakePort, World, command, established_crd, names


def change(**fields: object) -> FeaturesChange:
    return FeaturesChange.model_validate(fields)


def ops(steps: list[Step]) -> list[str]:
    result = []
    for step in steps:
        if isinstance(step, Call):
            result.append(step.operation)
        elif isinstance(step, Apply):
            result.append(f"apply {step.obj['kind']}")
        elif isinstance(step, Remove):
            result.append(f"delete {step.ref[1]}")
        else:
            result.append("wait")
    return result


async def converge(port: FakePort, changes: dict[str, object], feature: str) -> int:
    """Run passes of one feature's stage until nothing is left; returns the passes taken."""
    cmd = command(changes)
    for passes in range(1, 20):
        _, steps, _, _ = await advance(port, cmd, feature)
        if not steps:
            return passes
        port.world.settle()
    raise AssertionError("did not converge")


# ---- the contract ------------------------------------------------------------------------------


def test_a_change_must_name_something_and_be_consistent() -> None:
    with pytest.raises(ValidationError, match="names no feature"):
        FeaturesChange.model_validate({})
    with pytest.raises(ValidationError, match="only applies while"):
        change(tiered_checkpointing={"enabled": False, "memory_percentage": 30})
    with pytest.raises(ValidationError):
        change(tiered_checkpointing={"enabled": True, "memory_percentage": 0})
    with pytest.raises(ValidationError):
        FeaturesChange.model_validate({"training_operator": True, "karpenter": True})
    assert change(training_operator=False).requested() == {"training_operator": False}


# ---- training operator -------------------------------------------------------------------------


def test_training_operator_installs_cert_manager_first_and_waits_for_it() -> None:
    steps = feature_steps(
        names(), World().actual(), change(training_operator=True), "training_operator"
    )
    assert ops(steps) == ["CreateAddon", "wait", "CreateAddon", "wait"]
    assert [s.params["addonName"] for s in steps if isinstance(s, Call)] == [
        "cert-manager",
        "amazon-sagemaker-hyperpod-training-operator",
    ]
    now, wait = until_wait(steps)
    assert ops(now) == ["CreateAddon"] and wait is not None and "cert-manager" in wait.reason


def test_training_operator_disable_removes_its_add_on_only() -> None:
    world = World(addons={"cert-manager": "ACTIVE", TRAINING_ADDON: "ACTIVE"})
    steps = feature_steps(
        names(), world.actual(), change(training_operator=False), "training_operator"
    )
    assert ops(steps) == ["DeleteAddon", "wait"]
    assert steps[0].params["addonName"] == TRAINING_ADDON  # type: ignore[union-attr]


async def test_training_round_trip_converges_and_a_second_request_is_a_noop() -> None:
    world = World()
    port = FakePort(world)
    await converge(port, {"training_operator": True}, "training_operator")
    assert world.addons == {"cert-manager": "ACTIVE", TRAINING_ADDON: "ACTIVE"}
    made = len(world.calls)
    assert await converge(port, {"training_operator": True}, "training_operator") == 1
    assert len(world.calls) == made
    await converge(port, {"training_operator": False}, "training_operator")
    assert world.addons == {"cert-manager": "ACTIVE"}


async def test_a_pass_that_waits_repeats_no_mutation() -> None:
    world = World()
    port = FakePort(world)
    cmd = command({"training_operator": True})
    await advance(port, cmd, "training_operator")
    await advance(port, cmd, "training_operator")  # a redelivery before cert-manager is ready
    assert world.calls == ["CreateAddon"]


def test_a_failed_add_on_is_a_permanent_error_with_the_way_out() -> None:
    world = World(addons={"cert-manager": "CREATE_FAILED"})
    with pytest.raises(PermanentError) as error:
        feature_steps(names(), world.actual(), change(training_operator=True), "training_operator")
    assert error.value.code == "AddonFailed" and "describe-addon" in (error.value.hint or "")


# ---- inference operator ------------------------------------------------------------------------


async def test_inference_operator_round_trip() -> None:
    world = World(addons={"cert-manager": "ACTIVE"})
    port = FakePort(world)
    await converge(port, {"inference_operator": True}, "inference_operator")
    kinds = sorted(ref[1] for ref in world.objects)
    assert kinds == [
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "Deployment",
        "Namespace",
        "ServiceAccount",
    ]
    assert inference_enabled(world.actual())
    await converge(port, {"inference_operator": False}, "inference_operator")
    assert sorted(ref[1] for ref in world.objects) == [
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "Namespace",
    ]
    assert not inference_enabled(world.actual())


def test_inference_operator_installed_by_another_tool_is_not_removed() -> None:
    controller = next(o for o in inference_objects() if o["kind"] == "Deployment")
    foreign = {**controller, "metadata": {**controller["metadata"], "labels": {}}}
    world = World(objects={object_ref(controller): foreign})
    assert inference_enabled(world.actual())
    with pytest.raises(PermanentError, match="another tool"):
        feature_steps(
            names(), world.actual(), change(inference_operator=False), "inference_operator"
        )


# ---- tiered checkpointing ----------------------------------------------------------------------


def test_tiered_checkpointing_builds_the_identity_chain_then_the_config() -> None:
    steps = feature_steps(
        names(),
        World().actual(),
        change(tiered_checkpointing={"enabled": True, "memory_percentage": 40}),
        "tiered_checkpointing",
    )
    assert ops(steps) == [
        "CreateRole",
        "PutRolePolicy",
        "apply ServiceAccount",
        "UpdateCluster",
        "wait",
    ]
    create = steps[0]
    assert isinstance(create, Call)
    trust = json.loads(create.params["AssumeRolePolicyDocument"])["Statement"][0]
    assert trust["Principal"] == {"Federated": PROVIDER_ARN}
    assert trust["Action"] == "sts:AssumeRoleWithWebIdentity"
    condition = trust["Condition"]["StringEquals"]
    assert condition["oidc.eks.us-east-1.amazonaws.com/id/ABC123:sub"] == (
        "system:serviceaccount:default:hyperpod-tiered-checkpointing"
    )
    account = steps[2]
    assert isinstance(account, Apply)
    annotation = account.obj["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]
    assert annotation == "arn:aws:iam::111122223333:role/hyperpilot-llm-ckpt"
    update = steps[3]
    assert isinstance(update, Call)
    assert update.params == {
        "ClusterName": "llm",
        "TieredStorageConfig": {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 40},
    }


async def test_tiered_round_trip_removes_exactly_its_chain() -> None:
    other = RoleActual("arn:aws:iam::111122223333:role/keep", True, {}, None, ("hyperpilot",))
    world = World(roles={"keep": other})
    port = FakePort(world)
    await converge(port, {"tiered_checkpointing": {"enabled": True}}, "tiered_checkpointing")
    assert world.hyperpod is not None and world.hyperpod.tiered_percentage == 20
    assert set(world.roles) == {"keep", "hyperpilot-llm-ckpt"}
    before = set(world.objects)
    world.calls.clear()
    await converge(port, {"tiered_checkpointing": {"enabled": False}}, "tiered_checkpointing")
    assert world.calls == [
        "UpdateCluster",
        "delete ServiceAccount",
        "DeleteRolePolicy",
        "DeleteRole",
    ]
    assert set(world.roles) == {"keep"}
    assert len(before) - len(world.objects) == 1
    assert world.provider == PROVIDER_ARN and world.hyperpod.tiered_mode == "Disable"


def test_tiered_rules_need_actual_state() -> None:
    with pytest.raises(PermanentError) as error:
        feature_steps(
            names(),
            World().actual(),
            change(tiered_checkpointing={"memory_percentage": 30}),
            "tiered_checkpointing",
        )
    assert error.value.code == "InvalidFeatureChange"
    assert error.value.message.startswith("tiered_checkpointing.memory_percentage: ")
    taken = RoleActual("arn:aws:iam::111122223333:role/hyperpilot-llm-ckpt", False, {}, None)
    with pytest.raises(PermanentError, match="not made by Hyperpilot"):
        feature_steps(
            names(),
            World(roles={"hyperpilot-llm-ckpt": taken}).actual(),
            change(tiered_checkpointing={"enabled": True}),
            "tiered_checkpointing",
        )
    # a same-named role someone else made is never deleted either
    steps = feature_steps(
        names(),
        World(roles={"hyperpilot-llm-ckpt": taken}).actual(),
        change(tiered_checkpointing={"enabled": False}),
        "tiered_checkpointing",
    )
    assert steps == []
    with pytest.raises(PermanentError, match=r"tiered_checkpointing\.enabled: IAM has no OIDC"):
        feature_steps(
            names(),
            World(provider=None).actual(),
            change(tiered_checkpointing={"enabled": True}),
            "tiered_checkpointing",
        )


def test_update_waits_for_a_busy_cluster_before_calling() -> None:
    world = World()
    assert world.hyperpod is not None
    world.hyperpod = replace(world.hyperpod, status="Updating")
    world.roles["hyperpilot-llm-ckpt"] = RoleActual("arn", True, {}, None)
    steps = feature_steps(
        names(),
        world.actual(),
        change(tiered_checkpointing={"enabled": True}),
        "tiered_checkpointing",
    )
    now, wait = until_wait(steps)
    assert "UpdateCluster" not in ops(now) and wait is not None and "InService" in wait.reason


# ---- autoscaling -------------------------------------------------------------------------------


def test_autoscaling_enable_plans_role_update_and_karpenter_objects() -> None:
    steps = feature_steps(
        names(), World().actual(), change(autoscaling={"enabled": True}), "autoscaling"
    )
    assert ops(steps) == [
        "CreateRole",
        "PutRolePolicy",
        "UpdateCluster",
        "wait",
        "wait",
        "apply HyperpodNodeClass",
        "apply NodePool",
    ]
    update = steps[2]
    assert isinstance(update, Call)
    assert update.params["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter"}
    assert (
        update.params["ClusterRole"] == "arn:aws:iam::111122223333:role/hyperpilot-llm-autoscaler"
    )
    assert update.params["NodeProvisioningMode"] == "Continuous"
    node_class = steps[5]
    assert isinstance(node_class, Apply) and node_class.obj["spec"] == {"instanceGroups": ["gpu"]}


async def test_autoscaling_round_trip() -> None:
    world = World()
    port = FakePort(world)
    await converge(port, {"autoscaling": {"enabled": True}}, "autoscaling")
    assert world.hyperpod is not None and world.hyperpod.autoscaling_mode == "Enable"
    kinds = {ref[1] for ref in world.objects}
    assert {"HyperpodNodeClass", "NodePool"} <= kinds
    world.calls.clear()
    await converge(port, {"autoscaling": {"enabled": False}}, "autoscaling")
    assert world.calls == [
        "delete NodePool",
        "delete HyperpodNodeClass",
        "UpdateCluster",
        "DeleteRolePolicy",
        "DeleteRole",
    ]
    assert world.hyperpod.autoscaling_mode == "Disable"
    assert "hyperpilot-llm-autoscaler" not in world.roles
    world.calls.clear()
    await converge(port, {"autoscaling": {"enabled": True}}, "autoscaling")
    assert world.calls == [
        "CreateRole",
        "PutRolePolicy",
        "UpdateCluster",
        "apply HyperpodNodeClass",
        "apply NodePool",
    ]


def test_autoscaling_waits_until_karpenter_is_served() -> None:
    world = World(karpenter_with_autoscaling=False)
    world.hyperpod = replace(
        world.hyperpod,  # type: ignore[type-var]
        autoscaling_mode="Enable",
        autoscaler_type="Karpenter",
        cluster_role="arn:aws:iam::111122223333:role/hyperpilot-llm-autoscaler",
    )
    policy = autoscaler_policy(names())
    world.roles["hyperpilot-llm-autoscaler"] = RoleActual(
        "arn:aws:iam::111122223333:role/hyperpilot-llm-autoscaler",
        True,
        autoscaler_trust(),
        policy,
        ("hyperpilot",),
    )
    steps = feature_steps(
        names(), world.actual(), change(autoscaling={"enabled": True}), "autoscaling"
    )
    assert ops(steps)[0] == "wait"
    for crd in KARPENTER_CRDS:
        world.objects[crd_ref(crd)] = established_crd(crd)
    steps = feature_steps(
        names(), world.actual(), change(autoscaling={"enabled": True}), "autoscaling"
    )
    assert ops(steps) == ["apply HyperpodNodeClass", "apply NodePool"]


def test_autoscaling_rules() -> None:
    world = World()
    world.hyperpod = replace(world.hyperpod, node_recovery="None")  # type: ignore[type-var]
    with pytest.raises(PermanentError, match="NodeRecovery Automatic"):
        feature_steps(names(), world.actual(), change(autoscaling={"enabled": True}), "autoscaling")
    world.hyperpod = replace(world.hyperpod, node_recovery="Automatic", instance_groups=())
    with pytest.raises(PermanentError, match="no instance groups"):
        feature_steps(names(), world.actual(), change(autoscaling={"enabled": True}), "autoscaling")
    with pytest.raises(PermanentError, match="has no HyperPod cluster"):
        feature_steps(
            names(),
            World(hyperpod=None).actual(),
            change(autoscaling={"enabled": True}),
            "autoscaling",
        )


# ---- diff and plan -----------------------------------------------------------------------------


def test_plan_of_unchanged_values_is_a_noop_with_an_empty_diff() -> None:
    world = World(addons={"cert-manager": "ACTIVE", TRAINING_ADDON: "ACTIVE"})
    requested = change(
        training_operator=True,
        inference_operator=False,
        tiered_checkpointing={"enabled": False},
        autoscaling={"enabled": False},
    )
    planned = plan(names(), world.actual(), requested)
    assert planned.noop and planned.diff == {} and planned.calls == [] and planned.objects == []
    assert any("scope" in note for note in planned.notes)


def test_plan_lists_the_calls_objects_and_waits_in_order() -> None:
    planned = plan(
        names(),
        World().actual(),
        change(training_operator=True, tiered_checkpointing={"enabled": True}),
    )
    assert not planned.noop
    assert [c.operation for c in planned.calls] == [
        "CreateAddon",
        "CreateAddon",
        "CreateRole",
        "PutRolePolicy",
        "UpdateCluster",
    ]
    assert [o.kind for o in planned.objects] == ["ServiceAccount"]
    assert planned.diff["training_operator"].requested is True
    assert planned.diff["tiered_checkpointing.memory_percentage"].requested == 20
    assert any(n.startswith("training_operator: waits until") for n in planned.notes)


def test_describe_reports_each_feature_and_the_autoscaling_scope() -> None:
    world = World(addons={"cert-manager": "ACTIVE"})
    shown = describe(names(), world.actual())
    assert shown["training_operator"] == {
        "enabled": False,
        "addon": TRAINING_ADDON,
        "status": None,
        "requires": {"cert-manager": "ACTIVE"},
    }
    assert shown["tiered_checkpointing"]["identity"]["oidc_provider_arn"] == PROVIDER_ARN
    assert "HyperPod instance groups" in shown["autoscaling"]["scope"]


async def test_the_workflow_stage_ends_noop_when_nothing_differs() -> None:
    world = World(addons={"cert-manager": "ACTIVE", TRAINING_ADDON: "ACTIVE"})
    port = FakePort(world)
    workflow = update_features_workflow(port)
    assert [s.name for s in workflow.stages] == list(FEATURES)
    stage = next(s for s in workflow.stages if s.name == "training_operator")

    async def report(_message: str) -> None:
        return None

    ctx = StageContext(
        operation_id=uuid.uuid4(),
        stage=stage.name,
        command=command({"training_operator": True}).model_dump(mode="json"),
        outputs={},
        external_id=None,
        own_outputs={},
        _report=report,
        _parsed=command({"training_operator": True}),
    )
    result = await stage.run(ctx)
    assert isinstance(result, Done) and result.noop and world.calls == []
    pause = Wait("x")
    assert until_wait([Remove(crd_ref("a")), pause]) == (
        [Remove(crd_ref("a"))],
        pause,
    )
