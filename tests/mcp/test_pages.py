"""No result over 16 KB without a page token: every list tool, every event log and both log
tools, against a gateway with lists long (and items wide) enough to need several pages.

Each list is walked page by page with the token each result names: every page is under 16 KB
as sent, the pages together hold every item exactly once, and the last page names no next one.
The event logs are walked with `after` while `more` is true; the logs keep their newest lines
within `max_bytes` and say when they left some out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from mcp import Client

from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.results import RESULT_BYTES
from mcp_svc.server import build_server
from shared import pages

# Wide enough that a REST list of this many is several times 16 KB.
N = 300
NOTE = "x" * 120  # a long free-text field, as a real status message or spec value can be


def clusters() -> list[dict[str, Any]]:
    return [
        {
            "name": f"cluster-{i:03d}",
            "region": "us-east-1",
            "status": "active",
            "managed": True,
            "active": i == 7,
            "eks_cluster_arn": f"arn:aws:eks:us-east-1:123456789012:cluster/cluster-{i:03d}",
            "hyperpod_cluster_arn": f"arn:aws:sagemaker:us-east-1:123456789012:cluster/{i:012d}",
            "spec": {"note": NOTE},
            "created_at": f"2026-12-01T00:{i // 60:02d}:{i % 60:02d}+00:00",
        }
        for i in range(N)
    ]


def components() -> list[dict[str, Any]]:
    return [
        {
            "name": f"component-{i:03d}",
            "version": "1.2.3",
            "status": "failed" if i % 50 == 0 else "installed",
            "message": NOTE,
        }
        for i in range(N)
    ]


def endpoints() -> list[dict[str, Any]]:
    return [
        {
            "name": f"ep-{i:03d}",
            "cluster": f"cluster-{i % 3}",
            "kind": "container",
            "status": "ready",
            "replicas": 2,
            "ready_replicas": 2,
            "address": f"http://ep-{i:03d}.default.svc.cluster.local:8000",
            "message": NOTE,
        }
        for i in range(N)
    ]


def zones() -> list[dict[str, Any]]:
    return [
        {"zone_name": f"us-east-1-z{i:03d}", "zone_id": f"use1-az{i:03d}", "state": NOTE}
        for i in range(N)
    ]


def training_plans() -> list[dict[str, Any]]:
    return [
        {
            "training_plan_arn": f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/p-{i:03d}",
            "status": "Active",
            "reserved_capacity": [{"instance_type": "ml.p5.48xlarge", "count": 4, "note": NOTE}],
        }
        for i in range(N)
    ]


def account_clusters() -> list[dict[str, Any]]:
    return [
        {
            "kind": "eks" if i % 2 else "hyperpod",
            "name": f"account-{i:03d}",
            "arn": f"arn:aws:eks:us-east-1:123456789012:cluster/account-{i:03d}-{NOTE}",
            "status": "ACTIVE",
            "managed": False,
            "importable": True,
        }
        for i in range(N)
    ]


def instance_groups() -> list[dict[str, Any]]:
    return [
        {
            "name": f"group-{i:03d}",
            "instance_type": "ml.p5.48xlarge",
            "count": 4,
            "status": "InService",
            "spec": {"labels": {"team": NOTE}},
        }
        for i in range(N)
    ]


def buckets() -> list[dict[str, Any]]:
    return [
        {
            "name": f"bucket-{i:03d}",
            "region": "us-east-1",
            "status": "active",
            "arn": f"arn:aws:s3:::bucket-{i:03d}-{NOTE}",
        }
        for i in range(N)
    ]


def jobs() -> list[dict[str, Any]]:
    return [
        {
            "name": f"job-{i:03d}",
            "cluster": "c1",
            "recipe": "pytorch",
            "status": "Running",
            "message": NOTE,
            "created_at": f"2026-12-01T00:00:{i // 10:02d}.{i:06d}+00:00",
        }
        for i in range(N)
    ]


def spaces() -> list[dict[str, Any]]:
    return [
        {
            "name": f"space-{i:03d}",
            "owner": "alice",
            "status": "Running",
            "port_forward": f"kubectl port-forward -n hyperpod-spaces svc/space-{i:03d} 8888 {NOTE}",
        }
        for i in range(N)
    ]


def teams() -> list[dict[str, Any]]:
    return [
        {
            "name": f"team-{i:03d}",
            "namespace": f"hyperpod-ns-team-{i:03d}",
            "resources": [{"instance_type": "ml.p5.48xlarge", "count": 1}],
            "sharing": "Lend",
            "description": NOTE,
        }
        for i in range(N)
    ]


def teams_body(page: list[dict[str, Any]]) -> dict[str, Any]:
    """GET .../teams: the task governance object, its teams the page."""
    return {
        "cluster": "c1",
        "task_governance": {"enabled": True, "priority_classes": [{"name": "p", "weight": 1}]},
        "teams": page,
    }


OPERATIONS = [
    {
        "id": f"00000000-0000-4000-8000-{i:012d}",
        "kind": "cluster.create",
        "target_type": "cluster",
        "target_id": f"cluster-{i:03d}",
        "status": "failed" if i % 4 == 0 else "succeeded",
        "error": {"code": "capacity", "message": NOTE, "hint": NOTE} if i % 4 == 0 else None,
        "created_at": f"2026-12-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
    }
    for i in range(N)
]


def log(seq_base: int) -> list[dict[str, Any]]:
    return [
        {
            "seq": seq_base + i,
            "type": "StageSucceeded",
            "subject": f"cluster/cluster-{i % 7}",
            "operation_id": OPERATIONS[i % N]["id"],
            "principal": "admin",
            "source": "rest",
            "payload": {"stage": "eks", "detail": NOTE},
        }
        for i in range(1, N * 2 + 1)
    ]


EVENTS = log(0)


def kube_events(limit: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "Warning",
            "reason": "BackOff",
            "message": f"Back-off restarting failed container {i}: {NOTE}",
            "object": {"kind": "Pod", "name": f"job-{i:03d}-worker-0", "namespace": "default"},
        }
        for i in range(limit)
    ]


# Lines of a log, some longer than a page (a stack trace on one line, a JSON dump).
LOG_LINES = [f"step {i}: loss {i / 1000:.3f} {NOTE}" for i in range(2000)]
LOG_LINES[1500] = "y" * 20_000


Key = Callable[[dict[str, Any]], tuple[str, ...]]


def by_name(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["name"],)


def newest_first(row: dict[str, Any]) -> tuple[str, ...]:
    return row["created_at"], row["id"]


class LongLists:
    """The gateway's REST lists, long: whole lists where REST sends them whole, and the
    `after`/`limit` or `limit`/`page_token` pages where REST pages."""

    def __init__(self) -> None:
        # REST lists paged by cursor (gateway/pages.py): the list, its rows and their sort key.
        self.cursor: dict[str, tuple[str, Callable[[], list[dict[str, Any]]], Key]] = {
            "/api/v1/clusters": ("clusters", clusters, lambda r: (r["created_at"], r["name"])),
            "/api/v1/endpoints": ("endpoints", endpoints, lambda r: (r["cluster"], r["name"])),
            "/api/v1/clusters/c1/jobs": ("jobs", jobs, lambda r: (r["created_at"], r["name"])),
            "/api/v1/clusters/c1/dependencies": ("dependencies", components, by_name),
            "/api/v1/clusters/c1/instance-groups": ("instance-groups", instance_groups, by_name),
            "/api/v1/storage/buckets": ("buckets", buckets, by_name),
            "/api/v1/clusters/c1/spaces": ("spaces", spaces, by_name),
            "/api/v1/clusters/c1/teams": ("teams", teams, by_name),
            "/api/v1/operations": ("operations", lambda: OPERATIONS, newest_first),
        }
        self.whole: dict[str, Callable[[], list[dict[str, Any]]]] = {
            "/api/v1/inspect/availability-zones": zones,
            "/api/v1/inspect/training-plans": training_plans,
            "/api/v1/inspect/clusters": account_clusters,
        }

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        query = {k: v[0] for k, v in parse_qs(request.url.query.decode()).items()}
        if path in self.whole:
            return httpx.Response(200, json=self.whole[path]())
        if path in self.cursor:
            kind, listed, key = self.cursor[path]
            limit = int(query["limit"])
            assert limit <= (500 if kind == "operations" else 1000), f"GET {path}: limit"
            descending = kind == "operations"  # newest first
            ordered = sorted(listed(), key=key, reverse=descending)
            if "page_token" in query:
                try:
                    last = pages.decode(kind, query["page_token"], len(key(ordered[0])))
                except pages.BadPageToken as exc:  # as the gateway answers it
                    error = {"code": "invalid_page_token", "message": f"page_token: {exc}"}
                    return httpx.Response(400, json={"error": error})
                ordered = [r for r in ordered if (key(r) < last if descending else key(r) > last)]
            headers = {"x-total-count": str(N)}
            if len(ordered) > limit:
                headers["x-next-page-token"] = pages.encode(kind, key(ordered[limit - 1]))
            page = ordered[:limit]
            body: Any = page
            if kind == "teams":
                body = teams_body(page)
            elif kind == "operations":
                body = {"items": page}
            return httpx.Response(200, json=body, headers=headers)
        if path == "/api/v1/clusters/active":
            return httpx.Response(200, json=clusters()[7])
        if path in ("/api/v1/events", "/api/v1/audit"):
            after, limit = int(query["after"]), int(query["limit"])
            rows = [e for e in EVENTS if e["seq"] > after][:limit]
            return httpx.Response(200, json=rows)
        if path == "/api/v1/clusters/c1/jobs/j1/events":
            after = int(query.get("after", 0))
            return httpx.Response(200, json=[e for e in EVENTS if e["seq"] > after])
        if path == "/api/v1/clusters/c1/kubernetes-events":
            return httpx.Response(200, json={"events": kube_events(int(query["limit"]))})
        if path.endswith("/logs"):
            start = int(query.get("from", 0))
            return httpx.Response(
                200,
                text="\n".join(LOG_LINES[start:]),
                headers={"x-next-line": str(len(LOG_LINES)), "x-container": "pytorch"},
            )
        raise AssertionError(f"no such route in this test: {request.method} {path}")


@pytest.fixture
def server() -> Any:
    gateway = Gateway("http://gateway.test", "t", transport=httpx.MockTransport(LongLists()))
    return build_server(McpSettings(allow_write=False, gateway_token=None), gateway)


def sent_bytes(result: Any) -> int:
    """A result's size as the server sends it."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    assert sent_bytes(result) <= RESULT_BYTES, (tool, arguments, sent_bytes(result))
    data = result.structured_content
    assert isinstance(data, dict), tool
    return data


# tool, its arguments, the list's field, the REST list it pages, the key of an item
PAGED: list[tuple[str, dict[str, Any], str, Callable[[], list[dict[str, Any]]], str]] = [
    ("list_clusters", {}, "clusters", clusters, "name"),
    ("list_dependencies", {"cluster": "c1"}, "components", components, "name"),
    ("list_endpoints", {}, "endpoints", endpoints, "name"),
    ("list_availability_zones", {}, "zones", zones, "zone_id"),
    ("list_training_plans", {}, "training_plans", training_plans, "training_plan_arn"),
    ("list_account_clusters", {}, "clusters", account_clusters, "name"),
    ("list_instance_groups", {"cluster": "c1"}, "instance_groups", instance_groups, "name"),
    ("list_storage_buckets", {}, "buckets", buckets, "name"),
    ("list_training_jobs", {"cluster": "c1"}, "jobs", jobs, "name"),
    ("list_spaces", {"cluster": "c1"}, "spaces", spaces, "name"),
]


@pytest.mark.parametrize(("tool", "arguments", "field", "rows", "key"), PAGED)
async def test_a_long_list_comes_in_pages_under_16_kb(
    server: Any,
    tool: str,
    arguments: dict[str, Any],
    field: str,
    rows: Callable[[], list[dict[str, Any]]],
    key: str,
) -> None:
    expected = sorted(r[key] for r in rows())
    async with Client(server) as client:
        for limit in (None, 100):  # the default page and the largest one may ask for
            seen: list[str] = []
            token: str | None = None
            pages = 0
            while True:
                asked = {**arguments, "page_token": token}
                if limit:
                    asked["limit"] = limit
                page = await call(client, tool, asked)
                assert page["total"] == N
                seen += [item[key] for item in page[field]]
                pages += 1
                token = page["next_page_token"]
                if token is None:
                    break
                assert f"page_token='{token}'" in page["summary"]
                assert pages < N, "the pages never end"
            assert sorted(seen) == expected, tool  # every item
            assert len(set(seen)) == len(seen), tool  # once
            assert pages > 1, (tool, "the list fits one page: the test proves nothing")


async def test_operations_come_in_pages_of_the_rest_cursor(server: Any) -> None:
    async with Client(server) as client:
        seen: list[str] = []
        token: str | None = None
        pages = 0
        while True:
            page = await call(client, "list_operations", {"limit": 500, "page_token": token})
            assert page["total"] == N
            seen += [op["id"] for op in page["operations"]]
            pages += 1
            token = page["next_page_token"]
            if token is None:
                break
            assert f"page_token='{token}'" in page["summary"]
        bad = await client.call_tool("list_operations", {"page_token": "-1"})
    assert seen == [op["id"] for op in sorted(OPERATIONS, key=newest_first, reverse=True)]
    assert pages > 1
    assert bad.is_error and "page_token" in bad.content[0].text  # type: ignore[union-attr]


async def test_teams_come_in_pages_with_the_task_governance_on_each(server: Any) -> None:
    async with Client(server) as client:
        seen: list[str] = []
        token: str | None = None
        while True:
            page = await call(client, "list_teams", {"cluster": "c1", "page_token": token})
            assert page["total"] == N
            assert page["teams"]["task_governance"]["enabled"] is True
            seen += [t["name"] for t in page["teams"]["teams"]]
            token = page["next_page_token"]
            if token is None:
                break
            assert f"page_token='{token}'" in page["summary"]
            assert f"c1: {N} teams" in page["summary"]
    assert seen == sorted(t["name"] for t in teams())


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("list_events", {"limit": 1000}, "events"),
        ("list_audit_log", {"limit": 1000}, "entries"),
        ("get_training_job_events", {"cluster": "c1", "job": "j1"}, "events"),
    ],
)
async def test_an_event_log_comes_in_pages_under_16_kb(
    server: Any, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with Client(server) as client:
        seen: list[int] = []
        after = 0
        pages = 0
        while True:
            page = await call(client, tool, {**arguments, "after": after})
            seen += [e["seq"] for e in page[field]]
            pages += 1
            after = page["next_after"]
            if not page["more"]:
                break
            assert f"after={after}" in page["summary"]
            assert pages < len(EVENTS), "the pages never end"
    assert seen == [e["seq"] for e in EVENTS]
    assert pages > 1


async def test_kubernetes_events_keep_the_newest_that_fit_and_say_how_many_are_left_out(
    server: Any,
) -> None:
    async with Client(server) as client:
        page = await call(client, "list_kubernetes_events", {"cluster": "c1", "limit": 50})
    events = [e["object"]["name"] for e in page["events"]]
    newest = [e["object"]["name"] for e in kube_events(50)]
    assert events == newest[len(newest) - len(events) :]  # the newest, newest last
    assert page["older_left_out"] == 50 - len(events) > 0
    assert f"{page['older_left_out']} older ones left out" in page["summary"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get_pod_logs", {"cluster": "c1", "namespace": "default", "pod": "p-0"}),
        ("get_training_job_logs", {"cluster": "c1", "job": "j1", "pod": "j1-worker-0"}),
    ],
)
async def test_a_log_keeps_its_newest_lines_within_max_bytes(
    server: Any, tool: str, arguments: dict[str, Any]
) -> None:
    limit = {"tail_lines": 2000} if tool == "get_training_job_logs" else {"tail_lines": 5000}
    async with Client(server) as client:
        whole = await call(client, tool, {**arguments, **limit})
        small = await call(client, tool, {**arguments, **limit, "max_bytes": 2000})
        refused = await client.call_tool(tool, {**arguments, "max_bytes": 50_000})
    for page, budget in ((whole, 12_000), (small, 2000)):
        lines = page["lines"]
        assert page["truncated"] is True
        assert lines == LOG_LINES[len(LOG_LINES) - len(lines) :]  # the newest, in order
        assert len(json.dumps(lines)) <= budget + len(lines) + 2
    assert len(small["lines"]) < len(whole["lines"])
    assert refused.is_error and "max_bytes" in refused.content[0].text  # type: ignore[union-attr]


async def test_a_line_longer_than_max_bytes_keeps_its_end() -> None:
    from mcp_svc.results import tail_fitted

    lines, truncated = tail_fitted(["start", "z" * 5000 + "Error: NCCL timeout"], 1000)
    assert truncated is True and len(lines) == 1
    assert lines[0].endswith("Error: NCCL timeout") and len(lines[0]) <= 1000
    assert tail_fitted(["a", "b"], 1000) == (["a", "b"], False)
