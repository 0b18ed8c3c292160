"""Task governance end to end, on the embedded stack against the simulated AWS and its Kueue:
two teams with quotas on one cluster; team A submits beyond its quota and its job waits; the
pending explainer names the quota and the fix; team B lends its idle quota and the job runs; a
higher-priority job preempts a lower one of the same team; team A's endpoint beyond its quota
waits and its own explainer says so; all of it in Kubernetes' events,
read through REST. Viewers read teams; only admins change them."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp import Client as McpClient
from typer.testing import CliRunner

from hyperpilot.cli import app as cli_app
from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.server import build_server
from shared import pages
from sim.aws import SimulatedAws
from sim.k8s import ApiServer, KubeWorld
from tests.e2e.conftest import TOKEN, Client, RunningStack, cluster_spec, unique

# A cluster built and exercised end to end, several minutes: in `make reliability`.
pytestmark = pytest.mark.slow

TYPE = "ml.g5.12xlarge"  # 4 GPUs a node
KUEUE = "kueue.x-k8s.io/v1beta1"


def _poll(check: Callable[[], Any], timeout: float = 90, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"not met within {timeout}s: {what}"
        time.sleep(0.3)
    return found


def _accepted(api: Client, method: str, path: str, body: Any = None) -> dict[str, Any]:
    answer = api.http.request(method, path, json=body)
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=120)
    assert op["status"] in ("succeeded", "noop"), op.get("error")
    return op


@pytest.fixture(scope="module")
def governed(module_stack: RunningStack) -> Iterator[tuple[RunningStack, str]]:
    api = module_stack.client
    name = unique("gov")
    spec = cluster_spec(api, name, count=2)
    zone = spec["availability_zone_id"]
    offered = {
        t["instance_type"]
        for t in api.get(
            "/api/v1/inspect/instance-types", params={"availability_zone_id": zone}
        ).json()
    }
    assert TYPE in offered
    spec["instance_groups"][0]["instance_type"] = TYPE
    op = api.post("/api/v1/clusters", spec).json()["operation_id"]
    done = api.wait(op, timeout=240)
    assert done["status"] == "succeeded", done.get("error")
    yield module_stack, name
    api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)


def _server(sim_aws: SimulatedAws, cluster: str) -> ApiServer:
    kube = sim_aws.ctx.kube
    assert isinstance(kube, KubeWorld)
    return kube.api_server(cluster)


def _job(name: str, team: str, priority: str) -> dict[str, Any]:
    return {
        "recipe": "pytorch",
        "name": name,
        "instance_group": "gpu",
        "script": "code/train.py",
        "args": ["--max_steps", "100000"],
        "resources": {"gpus": 4},
        "team": team,
        "priority": priority,
    }


def _running(server: ApiServer, namespace: str, job: str) -> bool:
    return any(
        (p["metadata"].get("labels") or {}).get("hyperpilot.dev/job") == job
        and (p.get("status") or {}).get("phase") == "Running"
        for p in server.list_objects("v1", "Pod", namespace)
    )


def _workload(server: ApiServer, namespace: str, job: str) -> dict[str, Any] | None:
    for workload in server.list_objects(KUEUE, "Workload", namespace):
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o.get("name") == job for o in owners):
            return workload
    return None


def _condition(workload: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for condition in ((workload or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return {}


def test_two_teams_wait_borrow_and_preempt_with_the_explainer_naming_the_fix(
    governed: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = governed
    api = stack.client
    base = f"/api/v1/clusters/{cluster}"
    server = _server(sim_aws, cluster)

    # A team before task governance is refused on the field, with the way out.
    early = api.post(
        f"{base}/teams", {"name": "team-a", "resources": [{"instance_type": TYPE, "count": 1}]}
    )
    assert early.status_code == 422, early.text
    assert early.json()["error"]["fields"][0]["rule"] == "task_governance_enabled", early.text

    # Enabling it: the dry run first (add-on, then the scheduler config), then for real.
    plan = api.http.patch(
        f"{base}/task-governance", json={"enabled": True}, params={"dry_run": "true"}
    )
    assert plan.status_code == 200, plan.text
    calls = [c["operation"] for c in plan.json()["plan"]["calls"]]
    assert calls == ["CreateAddon", "CreateClusterSchedulerConfig"]
    _accepted(api, "PATCH", f"{base}/task-governance", {"enabled": True})
    listed = api.get(f"{base}/teams").json()
    assert listed["task_governance"]["enabled"] is True
    assert {p["name"] for p in listed["task_governance"]["priority_classes"]} >= {"high", "low"}

    # Two teams of one node each: A may borrow, B does not lend yet.
    _accepted(
        api,
        "POST",
        f"{base}/teams",
        {
            "name": "team-a",
            "resources": [{"instance_type": TYPE, "count": 1}],
            "sharing": "LendAndBorrow",
            "borrow_limit": 100,
        },
    )
    _accepted(
        api,
        "POST",
        f"{base}/teams",
        {
            "name": "team-b",
            "resources": [{"instance_type": TYPE, "count": 1}],
            "sharing": "DontLend",
        },
    )
    teams = {t["name"]: t for t in api.get(f"{base}/teams").json()["teams"]}
    assert teams["team-a"]["namespace"] == "hyperpod-ns-team-a"
    assert teams["team-b"]["sharing"] == "DontLend"
    # The teams come a page at a time, by name, the task governance on each page.
    first = api.get(f"{base}/teams", params={"limit": 1})
    assert first.status_code == 200, first.text
    assert first.headers["X-Total-Count"] == "2"
    second = api.get(
        f"{base}/teams", params={"limit": 1, "page_token": first.headers["X-Next-Page-Token"]}
    )
    assert second.status_code == 200, second.text
    assert "X-Next-Page-Token" not in second.headers
    assert second.json()["task_governance"] == first.json()["task_governance"]
    walked = [t["name"] for page in (first, second) for t in page.json()["teams"]]
    assert walked == sorted(teams) == ["team-a", "team-b"]
    foreign = api.get(f"{base}/teams", params={"page_token": pages.encode("spaces", ["team-a"])})
    assert foreign.status_code == 400, foreign.text
    assert foreign.json()["error"]["fields"][0]["field"] == "page_token"
    # A viewer reads teams and may not change them.
    viewer_token = api.post("/api/v1/tokens", {"name": "gov-viewer", "role": "viewer"}).json()
    viewer = Client(stack.stack.url, viewer_token["token"])
    assert viewer.get(f"{base}/teams").status_code == 200
    refused = viewer.post(
        f"{base}/teams", {"name": "team-c", "resources": [{"instance_type": TYPE, "count": 1}]}
    )
    assert refused.status_code == 403, refused.text

    # An unknown team or priority class is refused naming the field.
    bad = api.post(f"{base}/jobs", _job("nope", "team-z", "low"))
    assert bad.status_code == 422 and "team-z" in bad.text, bad.text
    bad = api.post(f"{base}/jobs", _job("nope", "team-a", "urgent"))
    assert bad.status_code == 422 and "urgent-priority" in bad.text, bad.text

    # Team A fills its quota; its second job waits.
    ns = "hyperpod-ns-team-a"
    _accepted(api, "POST", f"{base}/jobs", _job("a-one", "team-a", "low"))
    _poll(lambda: _running(server, ns, "a-one"), what="a-one runs")
    _accepted(api, "POST", f"{base}/jobs", _job("a-two", "team-a", "low"))
    _poll(
        lambda: (
            _condition(_workload(server, ns, "a-two"), "QuotaReserved").get("reason") == "Pending"
        ),
        what="a-two waits for quota",
    )
    assert not _running(server, ns, "a-two")
    why = api.get(f"{base}/jobs/a-two/pending")
    assert why.status_code == 200, why.text
    answer = why.json()
    assert answer["pending"] is True and answer["reason"] == "quota", answer
    assert answer["summary"].startswith(f"team team-a is at its quota of 4 {TYPE} GPUs"), answer
    assert "no other team has idle quota to lend" in answer["summary"]
    assert any("ask another team to lend" in f for f in answer["fixes"]), answer["fixes"]
    assert viewer.get(f"{base}/jobs/a-two/pending").json()["reason"] == "quota"

    # The same answer through MCP (read tools) and the CLI.
    async def through_mcp() -> tuple[Any, Any, Any]:
        mcp = build_server(
            McpSettings(allow_write=False, gateway_token=None), Gateway(stack.stack.url, TOKEN)
        )
        async with McpClient(mcp) as client:
            pending = await client.call_tool(
                "explain_pending", {"cluster": cluster, "job": "a-two"}
            )
            listed = await client.call_tool("list_teams", {"cluster": cluster})
            write = await client.call_tool("delete_team", {"cluster": cluster, "team": "team-b"})
        return pending, listed, write

    pending, teams_tool, write = asyncio.run(through_mcp())
    assert not pending.is_error and pending.structured_content is not None
    assert pending.structured_content["reason"] == "quota"
    assert pending.structured_content["summary"] == answer["summary"]
    assert "2 teams" in teams_tool.structured_content["summary"]
    assert write.is_error  # writes are off on this server: nothing was deleted
    # COLUMNS: a table as wide as the CLI prints it when piped, whatever an earlier test left
    env = {"HYPERPILOT_URL": stack.stack.url, "HYPERPILOT_TOKEN": TOKEN, "COLUMNS": "160"}
    runner = CliRunner()
    why_cli = runner.invoke(
        cli_app, ["jobs", "why-pending", "a-two", "-c", cluster, "-o", "json"], env=env
    )
    assert why_cli.exit_code == 0, why_cli.output
    assert json.loads(why_cli.output)["summary"] == answer["summary"]
    table_cli = runner.invoke(cli_app, ["teams", "list", "-c", cluster], env=env)
    assert table_cli.exit_code == 0, table_cli.output
    assert "hyperpod-ns-team-b" in table_cli.output and "DontLend" in table_cli.output

    # Team B lends its idle node (the CLI's dry run first): A's job runs on borrowed quota.
    planned = runner.invoke(
        cli_app,
        [
            "teams",
            "update",
            "team-b",
            "-c",
            cluster,
            "--sharing",
            "Lend",
            "--dry-run",
            "-o",
            "json",
        ],
        env=env,
    )
    assert planned.exit_code == 0, planned.output
    assert [c["operation"] for c in json.loads(planned.output)["plan"]["calls"]] == [
        "UpdateComputeQuota"
    ]
    _accepted(api, "PATCH", f"{base}/teams/team-b", {"sharing": "Lend"})
    _poll(lambda: _running(server, ns, "a-two"), what="a-two runs on borrowed quota")
    assert api.get(f"{base}/jobs/a-two/pending").json()["pending"] is False

    # A higher-priority job of team A preempts one of its lower-priority jobs.
    _accepted(api, "POST", f"{base}/jobs", _job("a-urgent", "team-a", "high"))
    _poll(lambda: _running(server, ns, "a-urgent"), timeout=120, what="a-urgent runs")
    evicted = [
        job
        for job in ("a-one", "a-two")
        if _condition(_workload(server, ns, job), "Evicted").get("reason") == "Preempted"
    ]
    assert evicted, "no lower-priority workload was preempted"
    events = api.get(f"{base}/kubernetes-events", params={"namespace": ns}).json()
    items = events.get("events", events) if isinstance(events, dict) else events
    reasons = {e.get("reason") for e in items}
    assert {"QuotaReserved", "Admitted", "Preempted"} <= reasons, reasons
    why = api.get(f"{base}/jobs/{evicted[0]}/pending").json()
    assert why["pending"] is True and "preempted" in why["summary"], why

    # A team's self-managed endpoint beyond its quota waits too, and the endpoint's explainer
    # says so: Kueue queues its workers' Deployment pod by pod.
    serve = {
        "name": "a-serve",
        "instance_type": TYPE,
        "gpus": 4,
        "replicas": 1,
        "service": "internal",
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
        "team": "team-a",
        "priority": "low",
    }
    created = api.http.post("/api/v1/endpoints", json=serve, params={"cluster": cluster})
    assert created.status_code == 202, created.text
    seen: list[Any] = []

    def endpoint_waits() -> dict[str, Any] | None:
        answer = api.get(f"{base}/endpoints/a-serve/pending").json()
        seen[:] = [answer, api.get(f"/api/v1/operations/{created.json()['operation_id']}").json()]
        ok = answer.get("pending") is True and answer.get("reason") == "quota"
        return answer if ok else None

    try:
        waiting = _poll(endpoint_waits, timeout=120, what="a-serve waits for team-a's quota")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen: {json.dumps(seen)[:3000]}") from None
    assert "team-a" in waiting["summary"] and waiting["fixes"], waiting
    assert viewer.get(f"{base}/endpoints/a-serve/pending").json()["reason"] == "quota"
    assert api.get(f"{base}/endpoints/nope/pending").status_code == 404
    gone = api.http.delete("/api/v1/endpoints/a-serve", params={"cluster": cluster})
    assert gone.status_code == 202, gone.text
    assert api.wait(gone.json()["operation_id"], timeout=120)["status"] in ("succeeded", "noop")

    # Teams go before task governance does.
    kept = api.http.patch(
        f"{base}/task-governance", json={"enabled": False}, params={"dry_run": "true"}
    )
    assert kept.status_code == 409 and "team-a" in kept.text, kept.text
