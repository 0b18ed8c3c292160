"""The MCP server's `tools/list` as an agent loads it, and its largest result: the sizes
against the goals (`tools/list` <= 60 KB; no result over 16 KB without a page token).

    .venv/bin/python -m bench.mcp_tools

No stack: the server is built as `python -m mcp_svc` builds it (read-only) and its `tools/list`
result serialized as the SDK sends it (`mcp_svc.reference.listed_size`); the biggest parts are
recorded too, to show where the bytes are, and whether each goal is met (`meets_goal`,
`result_meets_goal`). The listing rules that keep it under the goal are in
`mcp_svc.registry.input_schema` (docs/mcp-tools.md, "What tools/list carries").
The largest result: every list, event-log and log
tool called with the most it may ask for (the largest `limit`, `tail_lines` and `max_bytes`)
against a gateway answering long lists (LIST_ITEMS items of each REST list, each with a
NOTE-long text field, and LOG_LINES lines of log), every result measured as sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from bench.common import record

GOAL_BYTES = 60_000
BEFORE_BYTES = 215_776  # 60 tools, before the schemas were made lean
# 74 tools with lean keywords, every nested field, pattern and read's output schema listed.
UNOUTLINED_BYTES = 112_820
RESULT_GOAL_BYTES = 16_000
LIST_ITEMS = 500
NOTE = "x" * 200
LOG_LINES = 10_000


def _bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


async def measure() -> dict[str, Any]:
    from mcp_svc.config import McpSettings
    from mcp_svc.reference import listed_size
    from mcp_svc.server import build_server

    server = build_server(McpSettings(allow_write=False, gateway_token=None))
    tools = await server.list_tools()
    size = await listed_size(server)
    dumped = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]
    parts: dict[str, int] = {}
    for tool in dumped:
        for key, value in tool.items():
            parts[key] = parts.get(key, 0) + _bytes(value)
    largest = sorted(
        ((_bytes(t.get("inputSchema")) + _bytes(t.get("outputSchema")), t["name"]) for t in dumped),
        reverse=True,
    )[:5]
    return {
        "tools": len(tools),
        "tools_list_bytes": size,
        "goal_bytes": GOAL_BYTES,
        "ratio_to_goal": round(size / GOAL_BYTES, 2),
        "meets_goal": size <= GOAL_BYTES,
        "before_bytes": BEFORE_BYTES,
        "unoutlined_bytes": UNOUTLINED_BYTES,
        "bytes_by_part": parts,
        "largest_schemas": [{"tool": name, "bytes": n} for n, name in largest],
    }


def _rows(path: str, n: int) -> list[dict[str, Any]]:
    """`n` items of the REST list at `path`, with the fields its tool reads and a long note."""
    if path.endswith("/availability-zones"):
        return [
            {"zone_name": f"z-{i:05d}", "zone_id": f"use1-az{i:05d}", "note": NOTE}
            for i in range(n)
        ]
    if path.endswith("/inspect/clusters"):
        return [
            {
                "kind": "eks",
                "name": f"c-{i:05d}",
                "managed": False,
                "importable": True,
                "note": NOTE,
            }
            for i in range(n)
        ]
    if path.endswith("/training-plans"):
        return [{"training_plan_arn": f"arn:plan/{i:05d}", "note": NOTE} for i in range(n)]
    if path.endswith("/instance-types"):
        return [
            {
                "instance_type": f"ml.t{i:05d}.large",
                "availability_zone_ids": ["use1-az1"],
                "note": NOTE,
            }
            for i in range(n)
        ]
    return [
        {
            "name": f"item-{i:05d}",
            "region": "us-east-1",
            "status": "active",
            "managed": True,
            "active": False,
            "instance_type": "ml.p5.48xlarge",
            "count": 4,
            "note": NOTE,
            # The sort keys of the lists paged by cursor (clusters, jobs, endpoints, ...).
            "cluster": "c1",
            "created_at": f"2026-12-01T00:00:00.{i:06d}+00:00",
        }
        for i in range(n)
    ]


def _events(after: int, limit: int) -> list[dict[str, Any]]:
    last = LIST_ITEMS * 10
    return [
        {"seq": seq, "type": "StageSucceeded", "payload": {"note": NOTE}}
        for seq in range(after + 1, min(after + limit, last) + 1)
    ]


def _gateway() -> Any:
    """A gateway answering every list route with long lists."""
    import httpx

    from mcp_svc.client import Gateway

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        query = dict(request.url.params)
        if path.endswith("/logs"):
            text = "\n".join(f"line {i} {NOTE}" for i in range(LOG_LINES))
            return httpx.Response(200, text=text, headers={"x-next-line": str(LOG_LINES)})
        if path in ("/api/v1/events", "/api/v1/audit") or path.endswith("/events"):
            after = int(query.get("after", 0))
            return httpx.Response(200, json=_events(after, int(query.get("limit", 1_000_000))))
        if path == "/api/v1/operations":
            limit = int(query["limit"])
            ops = [
                {
                    "id": f"00000000-0000-4000-8000-{i:012d}",
                    "kind": "cluster.create",
                    "target_type": "cluster",
                    "target_id": f"c-{i}",
                    "status": "failed",
                    "error": {"message": NOTE},
                    # The sort key of the cursor pages (newest first).
                    "created_at": f"2026-12-01T00:00:00.{LIST_ITEMS - i:06d}+00:00",
                }
                for i in range(min(limit, LIST_ITEMS))
            ]
            return httpx.Response(200, json={"items": ops})
        if path.endswith("/teams"):
            teams = _rows(path, LIST_ITEMS)
            return httpx.Response(
                200, json={"cluster": "c1", "task_governance": {}, "teams": teams}
            )
        if path.endswith("/kubernetes-events"):
            events = [{"type": "Warning", "message": NOTE} for _ in range(int(query["limit"]))]
            return httpx.Response(200, json={"events": events})
        if path.endswith("/nodes"):
            nodes = [
                {"node_id": f"i-{i:017x}", "health": "healthy", "note": NOTE}
                for i in range(LIST_ITEMS)
            ]
            return httpx.Response(200, json={"nodes": nodes, "summary": {}})
        if path.endswith("/pods"):
            pods = [
                {"name": f"p-{i:05d}", "namespace": "default", "note": NOTE}
                for i in range(LIST_ITEMS)
            ]
            return httpx.Response(200, json={"pods": pods})
        return httpx.Response(200, json=_rows(path, LIST_ITEMS))

    return Gateway("http://gateway.bench", "t", transport=httpx.MockTransport(answer))


# Each list, event-log and log tool with the most it may ask for.
CALLS: dict[str, dict[str, Any]] = {
    "list_clusters": {"limit": 100},
    "list_dependencies": {"cluster": "c1", "limit": 100},
    "list_endpoints": {"limit": 100},
    "list_availability_zones": {"limit": 100},
    "list_training_plans": {"limit": 100},
    "list_account_clusters": {"limit": 100},
    "list_instance_groups": {"cluster": "c1", "limit": 100},
    "list_storage_buckets": {"limit": 100},
    "list_training_jobs": {"cluster": "c1", "limit": 100},
    "list_spaces": {"cluster": "c1", "limit": 100},
    "list_teams": {"cluster": "c1", "limit": 100},
    "list_instance_types": {"limit": 40},
    "list_nodes": {"cluster": "c1", "limit": 40},
    "list_pods": {"cluster": "c1", "limit": 30},
    "list_operations": {"limit": 500},
    "list_events": {"limit": 1000},
    "list_audit_log": {"limit": 1000},
    "get_training_job_events": {"cluster": "c1", "job": "j1"},
    "list_kubernetes_events": {"cluster": "c1", "limit": 50},
    "get_pod_logs": {"cluster": "c1", "namespace": "default", "pod": "p-0", "tail_lines": 5000},
    "get_training_job_logs": {"cluster": "c1", "job": "j1", "pod": "j1-0", "tail_lines": 2000},
    # The biggest complete input schema there is, in one result.
    "get_tool_schema": {"tool": "submit_training_job"},
}


async def largest_result() -> dict[str, Any]:
    from mcp import Client

    from mcp_svc.config import McpSettings
    from mcp_svc.server import build_server

    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    server = build_server(McpSettings(allow_write=False, gateway_token=None), _gateway())
    sizes: dict[str, int] = {}
    async with Client(server) as client:
        for tool, arguments in CALLS.items():
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise RuntimeError(f"{tool}: {result.content}")
            sizes[tool] = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
    tool, size = max(sizes.items(), key=lambda kv: kv[1])
    return {
        "largest_result_bytes": size,
        "largest_result_tool": tool,
        "result_goal_bytes": RESULT_GOAL_BYTES,
        "result_meets_goal": size <= RESULT_GOAL_BYTES,
        "result_bytes_by_tool": sizes,
    }


def main() -> None:
    result = asyncio.run(measure())
    result |= asyncio.run(largest_result())
    path = record("mcp_tools", result)
    met = "met" if result["meets_goal"] else "NOT met"
    print(
        f"tools/list: {result['tools']} tools, {result['tools_list_bytes']:,} bytes"
        f" ({result['ratio_to_goal']}x the {GOAL_BYTES:,} byte goal: {met}); largest result"
        f" {result['largest_result_bytes']:,} bytes ({result['largest_result_tool']}, goal"
        f" <= {RESULT_GOAL_BYTES:,}) -> {path}"
    )


if __name__ == "__main__":
    main()
