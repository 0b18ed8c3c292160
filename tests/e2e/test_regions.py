"""One control plane, two regions: a cluster created in each, listed side by side, one scaled
while the other is untouched, every resource in its own region (read with raw boto3 per
region), and a region the control plane does not serve refused with the words."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from hyperpilot.infra import Postgres
from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import aws_env, simulated_aws, wait_for
from tests.conftest import TEMPLATE
from tests.e2e.conftest import Client, RunningStack, _stack, unique

# Two clusters built in two regions: in `make reliability`, so that `make test` stays under 30 minutes on 2 cores.
pytestmark = pytest.mark.slow

WEST = "us-west-2"
EAST = "us-east-1"

# This module's simulated AWS serves both regions at one endpoint.
sim_aws = simulated_aws(
    profile="fast", kube=KubeWorld(get_profile("fast")), regions=(WEST,), scope="module"
)


@pytest.fixture(scope="module")
def two_region_stack(
    tmp_path_factory: pytest.TempPathFactory, postgres: Postgres, sim_aws: SimulatedAws
) -> Iterator[RunningStack]:
    database_url = postgres.create_database(f"r{time.time_ns()}", template=TEMPLATE)
    state: Path = tmp_path_factory.mktemp("regions")
    with _stack(state, database_url, sim_aws, {"HYPERPILOT_AWS_REGIONS": f"{EAST},{WEST}"}) as up:
        yield up


def raw(sim: SimulatedAws, service: str, region: str) -> Any:
    """A botocore client we did not write, in `region`, without client-side validation."""
    env = aws_env(sim)
    return boto3.client(
        service,
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=region,
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        config=Config(parameter_validation=False),
    )


def zones_of(api: Client, region: str) -> httpx.Response:
    """The region's zones, once cluster-svc answers inspect queries (it connects to NATS)."""
    deadline = time.monotonic() + 30
    params = {"region": region}
    while (
        zones := api.get("/api/v1/inspect/availability-zones", params=params)
    ).status_code == 503:
        assert time.monotonic() < deadline, zones.text
        time.sleep(0.1)
    return zones


def spec_in(api: Client, name: str, region: str) -> dict[str, Any]:
    params = {"region": region}
    zones = zones_of(api, region)
    assert zones.status_code == 200, zones.text
    zone = zones.json()[0]["zone_id"]
    offered = api.get(
        "/api/v1/inspect/instance-types", params={**params, "availability_zone_id": zone}
    ).json()
    types = [t["instance_type"] for t in offered if zone in t["availability_zone_ids"]]
    return {
        "name": name,
        "region": region,
        "availability_zone_id": zone,
        "instance_groups": [
            {
                "name": "gpu",
                "instance_type": "ml.g5.8xlarge" if "ml.g5.8xlarge" in types else types[0],
                "count": 1,
            }
        ],
    }


def hyperpod_counts(sim: SimulatedAws, region: str, name: str) -> dict[str, int]:
    described = raw(sim, "sagemaker", region).describe_cluster(ClusterName=name)
    return {g["InstanceGroupName"]: g["TargetCount"] for g in described["InstanceGroups"]}


def eks_endpoint(sim: SimulatedAws, region: str, name: str) -> str:
    return str(raw(sim, "eks", region).describe_cluster(name=name)["cluster"]["endpoint"])


def same_name_in(sim: SimulatedAws, region: str, name: str, like: str) -> dict[str, Any]:
    """An EKS cluster `name` made with raw boto3 in `region`, on the network of `like`."""
    eks = raw(sim, "eks", region)
    model = eks.describe_cluster(name=like)["cluster"]
    eks.create_cluster(
        name=name,
        roleArn=model["roleArn"],
        resourcesVpcConfig={"subnetIds": model["resourcesVpcConfig"]["subnetIds"]},
    )
    made: dict[str, Any] = wait_for(
        lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c,
        timeout=60,
    )
    return made


def test_regions_are_listed_and_others_refused(two_region_stack: RunningStack) -> None:
    api = two_region_stack.client
    assert api.get("/api/v1/inspect/regions").json() == {
        "default": EAST,
        "regions": [EAST, WEST],
    }
    west = zones_of(api, WEST)
    assert west.status_code == 200
    assert all(z["zone_id"].startswith("usw2-") for z in west.json())
    refused = zones_of(api, "eu-west-1")
    assert refused.status_code == 422
    [field] = refused.json()["error"]["fields"]
    assert field == {
        "field": "region",
        "rule": "region_served",
        "message": "region eu-west-1 is not served by this control plane"
        " (it serves us-east-1 and us-west-2)",
        "hint": "use one of us-east-1 and us-west-2, or add eu-west-1 to HYPERPILOT_AWS_REGIONS",
    }
    create = api.post("/api/v1/clusters", {**spec_in(api, "nowhere", EAST), "region": "eu-west-1"})
    assert create.status_code == 422
    assert create.json()["error"]["fields"][0]["rule"] == "region_served"


def test_prices_and_training_plans_of_a_region(
    two_region_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    """A region's price table and training plan offerings are that region's; a plan bought
    there exists in that region only (read with raw boto3 in each)."""
    api = two_region_stack.client
    west_zones = {z["zone_name"] for z in zones_of(api, WEST).json()}  # once cluster-svc answers
    prices = api.get("/api/v1/prices", params={"region": WEST})
    assert prices.status_code == 200, prices.text
    assert prices.json()["prices"]["region"] == WEST
    assert api.get("/api/v1/prices", params={"region": "eu-west-1"}).status_code == 422

    search = {"instance_type": "ml.p5.48xlarge", "instance_count": 2, "duration_days": 2}
    found = api.get("/api/v1/training-plans/offerings", params={**search, "region": WEST})
    assert found.status_code == 200, found.text
    assert found.json() and all(o["availability_zone"] in west_zones for o in found.json())
    offering = found.json()[0]
    refused = api.get("/api/v1/training-plans/offerings", params={**search, "region": "eu-west-1"})
    assert refused.status_code == 422
    assert refused.json()["error"]["fields"][0]["rule"] == "region_served"

    name = unique("west-plan")
    body = {
        "name": name,
        "offering_id": offering["offering_id"],
        "search": {**search, "region": WEST},
        "confirm_upfront_fee": offering["upfront_fee"],
    }
    elsewhere = api.post(
        "/api/v1/training-plans", {**body, "search": {**search, "region": "eu-west-1"}}
    )
    assert elsewhere.status_code == 422, elsewhere.text
    assert elsewhere.json()["error"]["fields"][0]["field"] == "search.region"
    bought = api.post("/api/v1/training-plans", body)
    assert bought.status_code == 202, bought.text
    done = api.wait(bought.json()["operation_id"], timeout=60)
    assert done["status"] == "succeeded", done.get("error")

    def plans_in(region: str) -> set[str]:
        answer = raw(sim_aws, "sagemaker", region).list_training_plans()
        return {p["TrainingPlanName"] for p in answer["TrainingPlanSummaries"]}

    assert name in plans_in(WEST) and name not in plans_in(EAST)
    listed = api.get("/api/v1/inspect/training-plans", params={"region": WEST}).json()
    assert name in {p["name"] for p in listed}


def test_an_mlflow_tracking_server_in_a_region(
    two_region_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    """A tracking server created in a served region is made there only and described there."""
    api = two_region_stack.client
    name = unique("west-mlflow")
    server = {
        "name": name,
        "artifact_store_uri": "s3://hyperpilot-mlflow/artifacts",
        "role_arn": "arn:aws:iam::123456789012:role/mlflow",
    }
    refused = api.post("/api/v1/mlflow/tracking-servers", {**server, "region": "eu-west-1"})
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["fields"][0]["rule"] == "region_served"
    created = api.post("/api/v1/mlflow/tracking-servers", {**server, "region": WEST})
    assert created.status_code == 202, created.text
    assert api.wait(created.json()["operation_id"])["status"] == "succeeded"

    def servers_in(region: str) -> set[str]:
        answer = raw(sim_aws, "sagemaker", region).list_mlflow_tracking_servers()
        return {s["TrackingServerName"] for s in answer["TrackingServerSummaries"]}

    assert name in servers_in(WEST) and name not in servers_in(EAST)
    described = api.get(f"/api/v1/mlflow/tracking-servers/{name}", params={"region": WEST})
    assert described.status_code == 200, described.text
    assert f":{WEST}:" in described.json()["arn"]
    assert api.get(f"/api/v1/mlflow/tracking-servers/{name}").status_code == 404


def test_clusters_in_two_regions_side_by_side(
    two_region_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = two_region_stack.client
    east, west = unique("east"), unique("west")
    ops = {
        east: api.post("/api/v1/clusters", spec_in(api, east, EAST)).json()["operation_id"],
        west: api.post("/api/v1/clusters", spec_in(api, west, WEST)).json()["operation_id"],
    }
    for name, op in ops.items():
        done = api.wait(op, timeout=300)
        assert done["status"] == "succeeded", (name, done.get("error"))
    try:
        page = api.get("/api/v1/clusters").json()
        items = page["items"] if isinstance(page, dict) else page  # paged or whole
        listed = {c["name"]: c for c in items}
        assert (listed[east]["region"], listed[west]["region"]) == (EAST, WEST)
        assert api.get(f"/api/v1/clusters/{west}").json()["region"] == WEST

        # every resource is where its cluster's region says, and only there
        for name, home, away in ((east, EAST, WEST), (west, WEST, EAST)):
            eks_home = raw(sim_aws, "eks", home).describe_cluster(name=name)["cluster"]
            assert eks_home["arn"].startswith(f"arn:aws:eks:{home}:")
            assert name not in raw(sim_aws, "eks", away).list_clusters()["clusters"]
            with pytest.raises(ClientError) as missing:
                raw(sim_aws, "sagemaker", away).describe_cluster(ClusterName=name)
            assert missing.value.response["Error"]["Code"] == "ResourceNotFound"
            assert hyperpod_counts(sim_aws, home, name) == {"gpu": 1}

        # one event queue and rule per served region: each region's HyperPod state changes
        # reached that region's queue (EventBridge rules see only their own region's events)
        for region in (EAST, WEST):
            queue = f"hyperpilot-aws-events-{region}"
            assert raw(sim_aws, "sqs", region).get_queue_url(QueueName=queue)["QueueUrl"]
            rules = raw(sim_aws, "events", region).list_rules(NamePrefix="hyperpilot-aws-events")
            assert [r["State"] for r in rules["Rules"]] == ["ENABLED"]
            assert sim_aws.in_region(region).hyperpod.events.delivered >= 2, region

        # scale the western cluster's group; the eastern cluster is untouched
        scaled = api.http.patch(f"/api/v1/clusters/{west}/instance-groups/gpu", json={"count": 2})
        assert scaled.status_code == 202, scaled.text
        done = api.wait(scaled.json()["operation_id"], timeout=240)
        assert done["status"] == "succeeded", done.get("error")
        assert hyperpod_counts(sim_aws, WEST, west) == {"gpu": 2}
        assert hyperpod_counts(sim_aws, EAST, east) == {"gpu": 1}
        assert api.get(f"/api/v1/clusters/{east}").json()["status"] == "active"

        # Capacity reads each cluster's own Kubernetes API and prices it in its own region.
        for name, home, nodes in ((east, EAST, 1), (west, WEST, 2)):
            capacity = wait_for(
                lambda name=name, nodes=nodes: (
                    (c := api.get(f"/api/v1/clusters/{name}/capacity").json()).get("node_total")
                    == nodes
                    and c
                ),
                timeout=60,
            )
            assert capacity["prices"]["region"] == home, capacity["prices"]
            assert capacity["cost_per_hour"] > 0 and all(
                i["per_hour"] for i in capacity["infrastructure"]
            ), capacity  # every region has its list prices
        fleet = {c["cluster"]: c for c in api.get("/api/v1/capacity").json()["clusters"]}
        assert fleet[east]["readable"] and fleet[west]["readable"], fleet

        # One EKS name in both regions: AWS allows it (names are unique per region), the
        # control plane's cluster names are unique across its regions, so it is refused.
        twin = same_name_in(sim_aws, WEST, east, like=west)
        seen = api.get("/api/v1/inspect/clusters", params={"region": WEST}).json()
        assert east in {c["name"] for c in seen if c["kind"] == "eks"}, seen
        refused = api.post("/api/v1/clusters/import", {"eks_cluster_name": east, "region": WEST})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "cluster_exists"
        assert twin["endpoint"] != eks_endpoint(sim_aws, EAST, east)
        raw(sim_aws, "eks", WEST).delete_cluster(name=east)
        wait_for(lambda: east not in raw(sim_aws, "eks", WEST).list_clusters()["clusters"])
    finally:
        for name in ops:
            deleted = api.delete(f"/api/v1/clusters/{name}")
            if deleted.status_code == 202:
                api.wait(deleted.json()["operation_id"], timeout=300)
    for name, home in ((east, EAST), (west, WEST)):
        assert name not in raw(sim_aws, "eks", home).list_clusters()["clusters"]
