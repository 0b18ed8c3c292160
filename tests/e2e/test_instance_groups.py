"""Instance groups through REST against the real stack: add a whole group in another zone, change
it by explicit diff (unchanged values make no call; fixed fields are a 422 with the rule), roll a
software update, delete it; checked with boto3 and kubectl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import Client, RunningStack
from tests.e2e.test_cluster_lifecycle import _kubeconfig, _kubectl

GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"


def _updates(sim: SimulatedAws, cluster: str) -> list[dict[str, Any]]:
    return [
        c["params"]
        for c in sim.call_log("sagemaker", "UpdateCluster")
        if c["params"].get("ClusterName") == cluster
    ]


def _groups(sim: SimulatedAws, cluster: str) -> dict[str, dict[str, Any]]:
    described = aws_client(sim, "sagemaker").describe_cluster(ClusterName=cluster)
    return {g["InstanceGroupName"]: g for g in described["InstanceGroups"]}


def _patch(api: Client, path: str, body: dict[str, Any], **params: Any) -> Any:
    return api.http.patch(path, json=body, params=params)


def _other_zone(api: Client, cluster: str) -> tuple[str, str]:
    """A zone other than the cluster's, and an instance type offered there."""
    home = api.get(f"/api/v1/clusters/{cluster}").json()["spec"]["availability_zone_id"]
    zones = [z["zone_id"] for z in api.get("/api/v1/inspect/availability-zones").json()]
    for zone in zones:
        if zone == home:
            continue
        offered = api.get(
            "/api/v1/inspect/instance-types", params={"availability_zone_id": zone}
        ).json()
        types = [t["instance_type"] for t in offered if zone in t["availability_zone_ids"]]
        if types:
            return zone, ("ml.g5.8xlarge" if "ml.g5.8xlarge" in types else types[0])
    raise AssertionError(f"no other zone offers an instance type: {zones}")


def test_unchanged_values_make_no_call_and_fixed_fields_are_refused(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    api = stack.client
    before = len(_updates(sim_aws, name))
    group = _groups(sim_aws, name)["gpu"]

    same = _patch(
        api,
        f"/api/v1/clusters/{name}/instance-groups/gpu",
        {"count": 2, "capacity_type": "on-demand", "interface_type": "efa"},
    )
    assert same.status_code == 202, same.text
    assert same.json()["noop"] is True and same.json()["diff"] == {}
    op = api.wait(same.json()["operation_id"])
    assert op["status"] == "noop", op.get("error")
    assert len(_updates(sim_aws, name)) == before  # zero mutating calls

    for field, value in (("capacity_type", "spot"), ("interface_type", "efa-only")):
        refused = _patch(api, f"/api/v1/clusters/{name}/instance-groups/gpu", {field: value})
        assert refused.status_code == 422, refused.text
        [problem] = refused.json()["error"]["fields"]
        assert problem["field"] == field and problem["rule"] == "fixed_for_group_life"
        assert "new group" in problem["hint"]

    empty = _patch(api, f"/api/v1/clusters/{name}/instance-groups/gpu", {})
    assert empty.status_code == 422 and "names no field" in empty.text
    unknown = _patch(api, f"/api/v1/clusters/{name}/instance-groups/gpu", {"size": 3})
    assert unknown.status_code == 422
    assert unknown.json()["error"]["fields"][0]["rule"] == "extra_forbidden"
    missing = _patch(api, f"/api/v1/clusters/{name}/instance-groups/nope", {"count": 1})
    assert missing.status_code == 422
    assert missing.json()["error"]["fields"][0]["rule"] == "instance_group_exists"

    token = api.post("/api/v1/tokens", {"name": f"op-{name}", "role": "operator"}).json()["token"]
    operator = Client(stack.stack.url, token)
    assert operator.delete(f"/api/v1/clusters/{name}/instance-groups/gpu").status_code == 403

    planned = _patch(
        api, f"/api/v1/clusters/{name}/instance-groups/gpu", {"count": 3}, dry_run="true"
    )
    assert planned.status_code == 200, planned.text
    plan = planned.json()["plan"]
    assert plan["noop"] is False
    assert plan["diff"] == {"count": {"actual": 2, "requested": 3}}
    [call] = plan["calls"]
    assert call["operation"] == "UpdateCluster"
    [entry] = call["params"]["InstanceGroups"]
    assert entry["InstanceCount"] == 3 and entry["ExecutionRole"] == group["ExecutionRole"]
    assert len(_updates(sim_aws, name)) == before  # a dry run changes nothing
    assert _groups(sim_aws, name)["gpu"]["TargetCount"] == 2


def test_add_scale_update_software_and_delete_a_group(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    stack, name = created_cluster
    api = stack.client
    zone, instance_type = _other_zone(api, name)
    group = {
        "name": "extra",
        "instance_type": instance_type,
        "count": 1,
        "availability_zone_id": zone,
        "capacity_type": "spot",
        "ebs_volume_gb": 200,
        "deep_health_checks": ["InstanceStress"],
        "labels": {"team": "nlp"},
        "taints": [{"key": "dedicated", "value": "nlp", "effect": "NoSchedule"}],
    }

    planned = api.post(
        f"/api/v1/clusters/{name}/instance-groups", group, params={"dry_run": "true"}
    )
    assert planned.status_code == 200, planned.text
    assert planned.json()["plan"]["calls"][-1]["operation"] == "UpdateCluster"
    assert "extra" not in _groups(sim_aws, name)

    before = len(_updates(sim_aws, name))
    added = api.post(f"/api/v1/clusters/{name}/instance-groups", group)
    assert added.status_code == 202, added.text
    op = api.wait(added.json()["operation_id"], timeout=90)
    assert op["status"] == "succeeded", op.get("error")
    assert [e["type"] for e in op["events"]][-2:] == ["InstanceGroupAdded", "OperationSucceeded"]
    [request] = _updates(sim_aws, name)[before:]
    assert [g["InstanceGroupName"] for g in request["InstanceGroups"]] == ["extra"]
    assert "InstanceGroupsToDelete" not in request

    # The group's /20 compute subnet in its zone, made by the one compute-subnet function.
    subnet_id = op["result"]["compute_subnet"]["subnet_id"]
    subnet = aws_client(sim_aws, "ec2").describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]
    assert subnet["AvailabilityZoneId"] == zone and subnet["CidrBlock"].endswith("/20")
    described = _groups(sim_aws, name)["extra"]
    assert described["OverrideVpcConfig"]["Subnets"] == [subnet_id]
    assert described["CapacityRequirements"] == {"Spot": {}}
    assert described["CurrentCount"] == 1

    listed = {g["name"]: g for g in api.get(f"/api/v1/clusters/{name}/instance-groups").json()}
    assert listed["extra"]["status"] == "InService" and listed["extra"]["count"] == 1
    no_plan = api.post(
        f"/api/v1/clusters/{name}/instance-groups",
        {
            **group,
            "name": "planned",
            "capacity_type": "training-plan",
            "training_plan_arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/none",
        },
    )
    assert no_plan.status_code == 422, no_plan.text
    assert no_plan.json()["error"]["fields"][0]["rule"] == "training_plan_exists"
    taken = api.post(f"/api/v1/clusters/{name}/instance-groups", {**group, "count": 3})
    assert taken.status_code == 422
    assert taken.json()["error"]["fields"][0]["rule"] == "instance_group_name_available"

    # Scale: exactly the count changes; labels, taints, spot, zone and checks stay.
    scaled = _patch(api, f"/api/v1/clusters/{name}/instance-groups/extra", {"count": 2})
    assert scaled.status_code == 202, scaled.text
    assert scaled.json()["diff"] == {"count": {"actual": 1, "requested": 2}}
    op = api.wait(scaled.json()["operation_id"], timeout=90)
    assert op["status"] == "succeeded", op.get("error")
    updated = [e for e in op["events"] if e["type"] == "InstanceGroupUpdated"]
    assert [e["payload"]["changes"] for e in updated] == [{"count": {"actual": 1, "requested": 2}}]
    [request] = _updates(sim_aws, name)[before + 1 :]
    [entry] = request["InstanceGroups"]
    assert entry["InstanceGroupName"] == "extra" and entry["InstanceCount"] == 2
    after = _groups(sim_aws, name)["extra"]
    assert after["CurrentCount"] == 2 and after["TargetCount"] == 2
    for kept in (
        "CapacityRequirements",
        "OverrideVpcConfig",
        "OnStartDeepHealthChecks",
        "InstanceStorageConfigs",
        "NetworkInterface",
        "LifeCycleConfig",
    ):
        assert after[kept] == described[kept], kept
    assert after["KubernetesConfig"]["DesiredLabels"] == {"team": "nlp"}
    assert _groups(sim_aws, name)["gpu"]["TargetCount"] == 2  # the other group untouched

    config = _kubeconfig(sim_aws, name, tmp_path / "kubeconfig")
    nodes = _kubectl(config, "get", "nodes", "-l", f"{GROUP_LABEL}=extra")["items"]
    assert len(nodes) == 2
    for node in nodes:
        assert node["metadata"]["labels"]["team"] == "nlp"
        assert {"key": "dedicated", "value": "nlp", "effect": "NoSchedule"} in node["spec"][
            "taints"
        ]
    listed = {g["name"]: g for g in api.get(f"/api/v1/clusters/{name}/instance-groups").json()}
    assert listed["extra"]["count"] == 2

    # Software update with a rolling deployment config.
    software_plan = api.post(
        f"/api/v1/clusters/{name}/software-update",
        {"instance_groups": ["extra"]},
        params={"dry_run": "true"},
    )
    assert software_plan.status_code == 200, software_plan.text
    assert [c["operation"] for c in software_plan.json()["plan"]["calls"]] == [
        "UpdateClusterSoftware"
    ]
    rolled = api.post(
        f"/api/v1/clusters/{name}/software-update",
        {
            "instance_groups": ["extra"],
            "batch_size": {"type": "count", "value": 1},
            "wait_interval_seconds": 0,
        },
    )
    assert rolled.status_code == 202, rolled.text
    op = api.wait(rolled.json()["operation_id"], timeout=90)
    assert op["status"] == "succeeded", op.get("error")
    [software] = [
        c["params"]
        for c in sim_aws.call_log("sagemaker", "UpdateClusterSoftware")
        if c["params"]["ClusterName"] == name
    ]
    assert software["InstanceGroups"] == [{"InstanceGroupName": "extra"}]
    assert software["DeploymentConfig"]["RollingUpdatePolicy"] == {
        "MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1}
    }

    # Delete (admin): only InstanceGroupsToDelete is sent.
    delete_plan = api.delete(
        f"/api/v1/clusters/{name}/instance-groups/extra", params={"dry_run": "true"}
    )
    assert delete_plan.status_code == 200, delete_plan.text
    assert delete_plan.json()["plan"]["calls"][0]["params"] == {
        "ClusterName": name,
        "InstanceGroupsToDelete": ["extra"],
    }
    # the deletion's cost: what the group's instances save per hour at list prices
    extra = _groups(sim_aws, name)["extra"]
    hourly = {
        t["instance_type"]: t["price_per_hour"]
        for t in api.get("/api/v1/prices").json()["instance_types"]
    }
    saved = round(extra["CurrentCount"] * hourly[extra["InstanceType"]], 4)
    cost = delete_plan.json()["plan"]["cost"]
    assert cost["adds_per_hour"] == -saved and saved > 0
    assert f"saves ${saved:,.2f}/h" in delete_plan.json()["plan"]["notes"][-1]
    assert "extra" in _groups(sim_aws, name)
    deleted = api.delete(f"/api/v1/clusters/{name}/instance-groups/extra")
    assert deleted.status_code == 202, deleted.text
    op = api.wait(deleted.json()["operation_id"], timeout=90)
    assert op["status"] == "succeeded", op.get("error")
    assert _updates(sim_aws, name)[-1] == {"ClusterName": name, "InstanceGroupsToDelete": ["extra"]}
    assert "extra" not in _groups(sim_aws, name)
    listed = [g["name"] for g in api.get(f"/api/v1/clusters/{name}/instance-groups").json()]
    assert listed == ["gpu"]
    # The subnet made for the group is recorded with the cluster's resources (deleted with it).
    resources = api.get(f"/api/v1/clusters/{name}").json()["resources"]
    assert subnet_id in resources["compute_subnet"]["created"]
