"""List prices and training plans, end to end through REST on one cluster: the price table
comes from the simulated AWS Price List API with its source and date; dry runs say what they
add per hour, the sum of their priced resources (instance groups, NAT gateway, FSx); a training
plan offering is searched, its purchase dry-run shows the fee, a wrong fee or a viewer is
refused, the confirmed purchase is bought in AWS, and the plan backs a new instance group, with
the plan's rules checked (its capacity); MCP and the CLI answer the same and buy behind the
same confirmation."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from mcp import Client as McpClient
from typer.testing import CliRunner

from hyperpilot.cli import app as cli_app
from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.server import build_server
from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from tests.e2e.conftest import TOKEN, Client, RunningStack, cluster_spec, unique

P5 = "ml.p5.48xlarge"


def _prices(api: Client) -> dict[str, Any]:
    answer = api.get("/api/v1/prices")
    assert answer.status_code == 200, answer.text
    table: dict[str, Any] = answer.json()
    return table


def test_dry_runs_say_what_they_add_at_the_price_lists_prices(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    table = _prices(api)
    source = table["prices"]
    assert source["source"].startswith("AWS Price List API (pricing:GetProducts")
    assert source["as_of"] == "2026-11-20" and source["fetched_at"]
    hourly = {t["instance_type"]: t["price_per_hour"] for t in table["instance_types"]}

    # the instance-type picker's read carries each type's price
    offered = api.get("/api/v1/inspect/instance-types").json()
    priced = [t for t in offered if t["price_per_hour"] is not None]
    assert priced and all(t["price_per_hour"] == hourly[t["instance_type"]] for t in priced)

    # a new cluster: its groups, its NAT gateway and its FSx file system
    spec = cluster_spec(api, unique("cost"), count=3)
    spec["storage"] = {"fsx_capacity_gib": 2400}
    plan = api.post("/api/v1/clusters", spec, params={"dry_run": "true"}).json()["plan"]
    cost = plan["cost"]
    kinds = sorted(i["kind"] for i in cost["items"])
    assert kinds == ["fsx_file_system", "instance_group", "nat_gateway"]
    assert cost["adds_per_hour"] == round(sum(i["per_hour"] for i in cost["items"]), 4)
    group = next(i for i in cost["items"] if i["kind"] == "instance_group")
    assert group["per_hour"] == round(3 * hourly[spec["instance_groups"][0]["instance_type"]], 4)
    assert cost["prices"] == source
    assert f"adds ${cost['adds_per_hour']:,.2f}/h at list prices (2026-11-20)" in plan["notes"]

    # scaling the cluster's group by two
    current = api.get(f"/api/v1/clusters/{cluster}/capacity").json()
    (gpu,) = current["groups"]
    answer = api.http.patch(
        f"/api/v1/clusters/{cluster}/instance-groups/gpu",
        json={"count": gpu["nodes"] + 2},
        params={"dry_run": "true"},
    )
    assert answer.status_code == 200, answer.text
    scaled = answer.json()["plan"]
    assert scaled["cost"]["adds_per_hour"] == round(2 * gpu["price_per_node_hour"], 4)

    # the capacity read prices its groups from the same table
    assert current["prices"] == source
    assert gpu["cost_per_hour"] == round(gpu["nodes"] * hourly[gpu["instance_type"]], 4)
    infrastructure = {i["kind"]: i["per_hour"] for i in current["infrastructure"]}
    assert infrastructure == {"nat_gateway": round(table["nat_gateway_per_hour"], 4)}
    assert current["cost_per_hour"] == round(gpu["cost_per_hour"] + sum(infrastructure.values()), 4)

    # a job's running pod in a team's namespace costs its share of its node while it runs
    kube = sim_aws.ctx.kube
    assert isinstance(kube, KubeWorld)
    core: Any = k8s.CoreV1Api(  # untyped here: bodies are plain manifests
        k8s_config.new_client_from_config_dict(kube.api_server(cluster).kubeconfig())  # type: ignore[no-untyped-call]
    )
    namespace = "hyperpod-ns-cost-team"
    core.create_namespace(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    node = api.get(f"/api/v1/clusters/{cluster}/capacity").json()["nodes"][0]
    gpus = node["resources"]["gpus"]["total"]
    wanted = {"nvidia.com/gpu": "1"}
    core.create_namespaced_pod(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "worker-0", "labels": {"hyperpilot.dev/job": "priced"}},
            "spec": {
                "nodeName": node["name"],
                "containers": [
                    {
                        "name": "main",
                        "image": "public.ecr.aws/docker/library/busybox:latest",
                        "command": ["sh", "-c", "sleep infinity"],
                        "resources": {"requests": wanted, "limits": wanted},
                    }
                ],
            },
        },
    )
    deadline = time.monotonic() + 60
    while core.read_namespaced_pod("worker-0", namespace).status.phase != "Running":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(1)
    costs = api.get(f"/api/v1/clusters/{cluster}/capacity").json()
    (job,) = [j for j in costs["jobs"] if j["name"] == "priced"]
    assert job["namespace"] == namespace and job["pods"] == 1
    assert job["cost_per_hour"] == round(hourly[node["instance_type"]] / gpus, 4)
    assert job["running_hours"] > 0 and job["cost_so_far"] > 0
    (team,) = [t for t in costs["teams"] if t["name"] == "cost-team"]
    assert team["cost_per_hour"] == job["cost_per_hour"]
    core.delete_namespaced_pod("worker-0", namespace)


def test_search_buy_and_use_a_training_plan(created_cluster: tuple[RunningStack, str]) -> None:
    stack, cluster = created_cluster
    api = stack.client
    zones = {
        z["zone_id"]: z["zone_name"] for z in api.get("/api/v1/inspect/availability-zones").json()
    }
    record = api.get(f"/api/v1/clusters/{cluster}").json()
    zone_id = record["spec"]["availability_zone_id"]
    search = {"instance_type": P5, "instance_count": 2, "duration_days": 2}

    bad = api.get("/api/v1/training-plans/offerings", params={**search, "instance_count": 3})
    assert bad.status_code == 422, bad.text
    (field,) = bad.json()["error"]["fields"]
    assert field["field"] == "query.instance_count" and "1, 2, 4, 8, 16, 32 or 64" in field["hint"]

    found = api.get("/api/v1/training-plans/offerings", params=search)
    assert found.status_code == 200, found.text
    offering = next(o for o in found.json() if o["availability_zone"] == zones[zone_id])
    assert offering["instance_type"] == P5 and offering["instance_count"] == 2
    assert offering["duration_hours"] == 48 and offering["target_resources"] == ["hyperpod-cluster"]
    fee = offering["upfront_fee"]
    name = unique("p5-plan")
    body = {
        "name": name,
        "offering_id": offering["offering_id"],
        "search": search,
    }

    # a purchase confirms the fee; a wrong one is refused, in a dry run too
    unconfirmed = api.post("/api/v1/training-plans", body)
    assert unconfirmed.status_code == 422, unconfirmed.text
    assert unconfirmed.json()["error"]["fields"][0]["field"] == "confirm_upfront_fee"
    wrong_fee = {**body, "confirm_upfront_fee": "1.00"}
    refused = api.post("/api/v1/training-plans", wrong_fee, params={"dry_run": "true"})
    assert refused.status_code == 422, refused.text
    (wrong,) = refused.json()["error"]["fields"]
    assert wrong["field"] == "confirm_upfront_fee" and fee in wrong["hint"]
    assert api.post("/api/v1/training-plans", wrong_fee).status_code == 422

    # the dry run shows the fee to confirm; nothing is bought
    dry = api.post("/api/v1/training-plans", body, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    plan = dry.json()["plan"]
    assert plan["diff"]["training_plan"]["requested"]["upfront_fee"] == fee
    assert [c["operation"] for c in plan["calls"]] == ["CreateTrainingPlan"]
    assert any(f"upfront fee of ${float(fee):,.2f} USD" in n for n in plan["notes"])
    listed = api.get("/api/v1/inspect/training-plans").json()
    assert name not in {p["name"] for p in listed}
    body["confirm_upfront_fee"] = fee

    # only an admin buys
    viewer_token = api.post("/api/v1/tokens", {"name": unique("tp-op"), "role": "operator"}).json()
    operator = Client(stack.stack.url, viewer_token["token"])
    assert operator.post("/api/v1/training-plans", body).status_code == 403

    bought = api.post("/api/v1/training-plans", body)
    assert bought.status_code == 202, bought.text
    done = api.wait(bought.json()["operation_id"], timeout=60)
    assert done["status"] == "succeeded", done.get("error")
    arn = next(s for s in done["stages"] if s["name"] == "training_plan")["outputs"]["arn"]
    deadline = time.monotonic() + 30
    while True:
        plans = {p["name"]: p for p in api.get("/api/v1/inspect/training-plans").json()}
        if plans[name]["status"] == "Active":
            break
        assert time.monotonic() < deadline, plans[name]
        time.sleep(0.2)
    assert plans[name]["arn"] == arn and plans[name]["total_instance_count"] == 2

    # the same offering cannot be bought twice
    again = api.post("/api/v1/training-plans", {**body, "name": unique("p5-again")})
    assert again.status_code == 422, again.text

    # used for an instance group: more than it reserves is refused on the plan's field
    group = {
        "name": "reserved",
        "instance_type": P5,
        "count": 3,
        "capacity_type": "training-plan",
        "training_plan_arn": arn,
        "availability_zone_id": zone_id,
    }
    path = f"/api/v1/clusters/{cluster}/instance-groups"
    too_many = api.post(path, group, params={"dry_run": "true"})
    assert too_many.status_code == 422, too_many.text
    assert any(f["field"].endswith("training_plan_arn") for f in too_many.json()["error"]["fields"])
    group["count"] = 2
    dry_group = api.post(path, group, params={"dry_run": "true"})
    assert dry_group.status_code == 200, dry_group.text
    prepaid = dry_group.json()["plan"]["cost"]
    assert prepaid["adds_per_hour"] == 0.0 and "prepaid" in prepaid["items"][0]["description"]
    added = api.post(path, group)
    assert added.status_code == 202, added.text
    result = api.wait(added.json()["operation_id"], timeout=120)
    assert result["status"] == "succeeded", result.get("error")
    plans = {p["name"]: p for p in api.get("/api/v1/inspect/training-plans").json()}
    assert plans[name]["in_use_instance_count"] == 2


def test_mcp_and_the_cli_show_the_same_prices_and_buy_behind_the_fee(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, _ = created_cluster
    api = stack.client
    table = _prices(api)
    search = {"instance_type": "ml.trn1.32xlarge", "instance_count": 1, "duration_days": 1}
    offerings = api.get("/api/v1/training-plans/offerings", params=search).json()
    first = offerings[0]

    async def through_mcp() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        server = build_server(
            McpSettings(allow_write=False, gateway_token=None), Gateway(stack.stack.url, TOKEN)
        )
        async with McpClient(server) as client:
            prices = await client.call_tool("get_prices", {})
            found = await client.call_tool("search_training_plan_offerings", search)
            dry = await client.call_tool(
                "buy_training_plan",
                {
                    "search": search,
                    "name": unique("mcp-plan"),
                    "offering_id": first["offering_id"],
                    "confirm_upfront_fee": first["upfront_fee"],
                    "dry_run": True,
                },
            )
        for result in (prices, found, dry):
            assert not result.is_error, result
            assert result.structured_content is not None
        assert prices.structured_content and found.structured_content and dry.structured_content
        return prices.structured_content, found.structured_content, dry.structured_content

    prices, found, dry = asyncio.run(through_mcp())
    assert prices["prices"] == table
    assert "published 2026-11-20" in prices["summary"]
    assert [o["offering_id"] for o in found["offerings"]] == [o["offering_id"] for o in offerings]
    assert found["summary"].startswith(f"{len(offerings)} offering")
    assert first["upfront_fee"] in json.dumps(dry)

    env = {"HYPERPILOT_URL": stack.stack.url, "HYPERPILOT_TOKEN": TOKEN, "COLUMNS": "200"}
    runner = CliRunner()
    shown = runner.invoke(cli_app, ["prices", "show", "-o", "json"], env=env)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == table
    args = ["--instance-type", "ml.trn1.32xlarge", "--count", "1", "--days", "1"]
    listed = runner.invoke(cli_app, ["training-plans", "offerings", *args, "-o", "json"], env=env)
    assert listed.exit_code == 0, listed.output

    def ids(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(o["offering_id"], o["upfront_fee"]) for o in rows]

    assert ids(json.loads(listed.stdout)) == ids(offerings)  # starts are "now": they move
    name = unique("cli-plan")
    buy = ["training-plans", "buy", name, "--offering", first["offering_id"], *args]
    refused = runner.invoke(cli_app, buy, env=env)  # no terminal, no --fee: not confirmed
    assert refused.exit_code != 0 and first["upfront_fee"] in refused.output
    bought = runner.invoke(cli_app, [*buy, "--fee", first["upfront_fee"], "--wait"], env=env)
    assert bought.exit_code == 0, bought.output
    plans = {p["name"]: p for p in api.get("/api/v1/inspect/training-plans").json()}
    assert plans[name]["total_instance_count"] == 1
