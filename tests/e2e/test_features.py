"""Managed features through REST on a cluster built once for the module: every feature round-trips
enable -> disable -> enable in the simulated world, checked with boto3 and kubectl; a PATCH that
changes nothing makes no mutating call; dry runs answer the plan and change nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import RunningStack
from tests.e2e.test_cluster_lifecycle import _kubeconfig

CHECKPOINT_SA = "hyperpod-tiered-checkpointing"


def _kubectl_items(config: Path, *args: str) -> list[dict[str, Any]]:
    kubectl = Path(sys.executable).parent / "kubectl"
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", str(config), "get", *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


def _names(config: Path, *args: str) -> set[str]:
    return {i["metadata"]["name"] for i in _kubectl_items(config, *args)}


@pytest.fixture(scope="module")
def kubeconfig(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws, tmp_path_factory: Any
) -> Path:
    _, name = created_cluster
    return _kubeconfig(sim_aws, name, tmp_path_factory.mktemp("kube") / "config")


def _patch(stack: RunningStack, name: str, body: dict[str, Any], **params: Any) -> Any:
    return stack.client.http.patch(f"/api/v1/clusters/{name}/features", json=body, params=params)


def _apply(stack: RunningStack, name: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = _patch(stack, name, body)
    assert answer.status_code == 202, answer.text
    accepted: dict[str, Any] = answer.json()
    done = stack.client.wait(accepted["operation_id"], timeout=90)
    assert done["status"] in ("succeeded", "noop"), done.get("error")
    accepted["final"] = done
    return accepted


def _features(stack: RunningStack, name: str) -> dict[str, Any]:
    answer = stack.client.get(f"/api/v1/clusters/{name}/features")
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _role(sim: SimulatedAws, role: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = aws_client(sim, "iam").get_role(RoleName=role)["Role"]
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "NoSuchEntity"
        return None
    return found


def test_unchanged_values_make_no_mutating_call_and_the_state_is_read_live(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    state = _features(stack, name)
    assert state["training_operator"]["enabled"] is True  # the dependency set installs it
    assert state["inference_operator"]["enabled"] is False
    assert state["tiered_checkpointing"]["enabled"] is False
    assert state["autoscaling"]["enabled"] is False
    assert "not manage general EC2 capacity" in state["autoscaling"]["scope"]

    before = len(sim_aws.changes())
    accepted = _apply(
        stack,
        name,
        {
            "training_operator": True,
            "inference_operator": False,
            "tiered_checkpointing": {"enabled": False},
            "autoscaling": {"enabled": False},
        },
    )
    assert accepted["diff"] == {} and accepted["noop"] is True
    assert accepted["final"]["status"] == "noop"
    assert len(sim_aws.changes()) == before, sim_aws.changes()[before:]


def test_dry_run_answers_the_plan_and_changes_nothing(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    before = len(sim_aws.changes())
    answer = _patch(
        stack,
        name,
        {"tiered_checkpointing": {"enabled": True, "memory_percentage": 30}},
        dry_run="true",
    )
    assert answer.status_code == 200, answer.text
    plan = answer.json()["plan"]
    assert plan["noop"] is False
    assert plan["diff"] == {
        "tiered_checkpointing.enabled": {"actual": False, "requested": True},
        "tiered_checkpointing.memory_percentage": {"actual": None, "requested": 30},
    }
    operations = [c["operation"] for c in plan["calls"]]
    assert operations == ["CreateRole", "PutRolePolicy", "UpdateCluster"]
    assert plan["calls"][2]["params"]["TieredStorageConfig"] == {
        "Mode": "Enable",
        "InstanceMemoryAllocationPercentage": 30,
    }
    [account] = plan["objects"]
    assert (account["kind"], account["name"]) == ("ServiceAccount", CHECKPOINT_SA)
    assert len(sim_aws.changes()) == before


def test_rules_answer_422_with_the_field_and_the_way_out(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, name = created_cluster
    both = _patch(
        stack, name, {"tiered_checkpointing": {"enabled": False, "memory_percentage": 40}}
    )
    assert both.status_code == 422, both.text
    assert both.json()["error"]["fields"][0]["hint"]
    empty = _patch(stack, name, {})
    assert empty.status_code == 422, empty.text
    share_while_off = _patch(stack, name, {"tiered_checkpointing": {"memory_percentage": 40}})
    assert share_while_off.status_code == 422, share_while_off.text
    field = share_while_off.json()["error"]["fields"][0]
    assert field["field"] == "tiered_checkpointing.memory_percentage"
    assert "enabled: true" in field["hint"]
    unknown = _patch(stack, name, {"training_operator": True, "karpenter": True})
    assert unknown.status_code == 422, unknown.text


# minutes of feature round trips: in `make reliability`, so `make test` stays under 30 min
@pytest.mark.slow
def test_tiered_checkpointing_round_trips_with_its_identity_chain(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws, kubeconfig: Path
) -> None:
    stack, name = created_cluster
    role_name = f"hyperpilot-{name}-ckpt"
    sagemaker = aws_client(sim_aws, "sagemaker")
    iam = aws_client(sim_aws, "iam")
    providers_before = iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]

    def present(share: int) -> None:
        role = _role(sim_aws, role_name)
        assert role is not None
        statement = role["AssumeRolePolicyDocument"]["Statement"][0]
        assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
        assert statement["Principal"]["Federated"] in {
            p["Arn"] for p in providers_before
        }  # the cluster's OIDC provider
        assert f"system:serviceaccount:default:{CHECKPOINT_SA}" in json.dumps(statement)
        assert iam.list_role_policies(RoleName=role_name)["PolicyNames"] == ["hyperpilot"]
        [account] = [
            a
            for a in _kubectl_items(kubeconfig, "serviceaccounts", "-n", "default")
            if a["metadata"]["name"] == CHECKPOINT_SA
        ]
        assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == role["Arn"]
        config = sagemaker.describe_cluster(ClusterName=name)["TieredStorageConfig"]
        assert config == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": share}

    def absent() -> None:
        assert _role(sim_aws, role_name) is None
        assert CHECKPOINT_SA not in _names(kubeconfig, "serviceaccounts", "-n", "default")
        config = sagemaker.describe_cluster(ClusterName=name)["TieredStorageConfig"]
        assert config["Mode"] == "Disable"
        # nothing else was removed: the cluster's OIDC provider and roles stay
        assert iam.list_open_id_connect_providers()["OpenIDConnectProviderList"] == providers_before
        assert _role(sim_aws, f"hyperpilot-{name}-exec") is not None

    enabled = _apply(
        stack, name, {"tiered_checkpointing": {"enabled": True, "memory_percentage": 30}}
    )
    assert enabled["diff"]["tiered_checkpointing.enabled"] == {"actual": False, "requested": True}
    present(30)
    assert _features(stack, name)["tiered_checkpointing"]["identity"]["role_arn_annotation"]

    resized = _apply(stack, name, {"tiered_checkpointing": {"memory_percentage": 50}})
    assert resized["diff"] == {
        "tiered_checkpointing.memory_percentage": {"actual": 30, "requested": 50}
    }
    present(50)

    before = len(sim_aws.changes())
    again = _apply(stack, name, {"tiered_checkpointing": {"enabled": True}})
    assert again["final"]["status"] == "noop" and len(sim_aws.changes()) == before

    disabled = _apply(stack, name, {"tiered_checkpointing": {"enabled": False}})
    assert disabled["final"]["status"] == "succeeded"
    absent()

    _apply(stack, name, {"tiered_checkpointing": {"enabled": True}})
    present(20)  # the default share when it is enabled afresh


def test_training_operator_round_trips_and_keeps_cert_manager(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    eks = aws_client(sim_aws, "eks")
    addon = "amazon-sagemaker-hyperpod-training-operator"

    disabled = _apply(stack, name, {"training_operator": False})
    assert disabled["diff"] == {"training_operator": {"actual": True, "requested": False}}
    assert addon not in eks.list_addons(clusterName=name)["addons"]
    assert "cert-manager" in eks.list_addons(clusterName=name)["addons"]

    enabled = _apply(stack, name, {"training_operator": True})
    assert enabled["final"]["status"] == "succeeded"
    assert eks.describe_addon(clusterName=name, addonName=addon)["addon"]["status"] == "ACTIVE"
    assert _features(stack, name)["training_operator"]["enabled"] is True


# minutes of feature round trips: in `make reliability`, so `make test` stays under 30 min
@pytest.mark.slow
def test_inference_operator_round_trips(
    created_cluster: tuple[RunningStack, str], kubeconfig: Path
) -> None:
    stack, name = created_cluster
    controller = "hyperpod-inference-operator-controller-manager"
    namespace = "hyperpod-inference-system"

    _apply(stack, name, {"inference_operator": True})
    assert controller in _names(kubeconfig, "deployments", "-n", namespace)
    crds = _names(kubeconfig, "customresourcedefinitions")
    assert "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com" in crds

    _apply(stack, name, {"inference_operator": False})
    assert controller not in _names(kubeconfig, "deployments", "-n", namespace)
    assert "hyperpod-inference-operator" not in _names(
        kubeconfig, "serviceaccounts", "-n", namespace
    )
    # endpoints made with the operator's kinds are not garbage-collected: the CRDs stay
    assert "jumpstartmodels.inference.sagemaker.aws.amazon.com" in _names(
        kubeconfig, "customresourcedefinitions"
    )

    again = _apply(stack, name, {"inference_operator": True})
    assert again["final"]["status"] == "succeeded"
    assert controller in _names(kubeconfig, "deployments", "-n", namespace)
    assert _features(stack, name)["inference_operator"]["installed_by_hyperpilot"] is True


# minutes of feature round trips: in `make reliability`, so `make test` stays under 30 min
@pytest.mark.slow
def test_autoscaling_round_trips_with_node_class_and_pool(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws, kubeconfig: Path
) -> None:
    stack, name = created_cluster
    # HyperPod installs its managed Karpenter once autoscaling is InService (the simulated
    # HyperPod too): nothing is installed by hand, and the stage finishes
    sagemaker = aws_client(sim_aws, "sagemaker")
    role_name = f"hyperpilot-{name}-autoscaler"
    # a group at zero instances: autoscaling is what scales it up from zero
    gpu = sagemaker.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    spare = {
        "InstanceGroupName": "spare",
        "InstanceType": gpu["InstanceType"],
        "InstanceCount": 0,
        "ExecutionRole": gpu["ExecutionRole"],
        "LifeCycleConfig": gpu["LifeCycleConfig"],
    }
    sagemaker.update_cluster(ClusterName=name, InstanceGroups=[spare])

    def present() -> None:
        described = sagemaker.describe_cluster(ClusterName=name)
        assert described["AutoScaling"]["Mode"] == "Enable"
        assert described["AutoScaling"]["AutoScalerType"] == "Karpenter"
        role = _role(sim_aws, role_name)
        assert role is not None and described["ClusterRole"] == role["Arn"]
        principal = role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]
        assert principal == {"Service": ["hyperpod.sagemaker.amazonaws.com"]}
        [node_class] = _kubectl_items(kubeconfig, "hyperpodnodeclasses")
        assert node_class["spec"]["instanceGroups"] == ["gpu", "spare"]
        [pool] = _kubectl_items(kubeconfig, "nodepools")
        assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "hyperpilot"

    enabled = _apply(stack, name, {"autoscaling": {"enabled": True}})  # waits for InService
    assert enabled["diff"] == {"autoscaling.enabled": {"actual": False, "requested": True}}
    assert any("scope" in n for n in enabled["plan"]["notes"])
    present()

    _apply(stack, name, {"autoscaling": {"enabled": False}})
    assert sagemaker.describe_cluster(ClusterName=name)["AutoScaling"]["Mode"] == "Disable"
    assert _kubectl_items(kubeconfig, "hyperpodnodeclasses") == []
    assert _kubectl_items(kubeconfig, "nodepools") == []
    assert _role(sim_aws, role_name) is None

    _apply(stack, name, {"autoscaling": {"enabled": True}})
    present()
    assert _features(stack, name)["autoscaling"]["cluster_role_made_by_hyperpilot"] is True


# minutes of feature round trips: in `make reliability`, so `make test` stays under 30 min
@pytest.mark.slow
def test_disabling_everything_in_one_patch_leaves_no_feature_resource(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws, kubeconfig: Path
) -> None:
    stack, name = created_cluster
    accepted = _apply(
        stack,
        name,
        {
            "inference_operator": False,
            "tiered_checkpointing": {"enabled": False},
            "autoscaling": {"enabled": False},
        },
    )
    assert set(accepted["diff"]) == {
        "inference_operator",
        "tiered_checkpointing.enabled",
        "autoscaling.enabled",
    }
    stages = {s["name"]: s["status"] for s in accepted["final"]["stages"]}
    changed = {
        "training_operator": "noop",
        "inference_operator": "succeeded",
        "tiered_checkpointing": "succeeded",
        "autoscaling": "succeeded",
    }
    assert {k: stages[k] for k in changed} == changed
    # the features the change does not name (spaces, observability, ...) make no call
    assert {v for k, v in stages.items() if k not in changed} == {"noop"}
    assert _role(sim_aws, f"hyperpilot-{name}-ckpt") is None
    assert _role(sim_aws, f"hyperpilot-{name}-autoscaler") is None
    assert CHECKPOINT_SA not in _names(kubeconfig, "serviceaccounts", "-n", "default")
    state = _features(stack, name)
    assert [state[f]["enabled"] for f in ("inference_operator", "autoscaling")] == [False, False]
    assert state["tiered_checkpointing"]["enabled"] is False
    assert state["training_operator"]["enabled"] is True
