"""The MCP server's `tools/list` as an agent loads it: its size against the 60 KB goal.

    .venv/bin/python -m bench.mcp_tools

No stack: the server is built as `python -m mcp_svc` builds it (read-only, no gateway call is
made) and its `tools/list` result serialized as the SDK sends it (`mcp_svc.reference.listed_size`).
The biggest parts are recorded too, to show where the bytes are.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bench.common import record

GOAL_BYTES = 60_000
BEFORE_BYTES = 215_776  # 60 tools, before the schemas were made lean


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
        "before_bytes": BEFORE_BYTES,
        "bytes_by_part": parts,
        "largest_schemas": [{"tool": name, "bytes": n} for n, name in largest],
    }


def main() -> None:
    result = asyncio.run(measure())
    path = record("mcp_tools", result)
    print(
        f"tools/list: {result['tools']} tools, {result['tools_list_bytes']:,} bytes"
        f" ({result['ratio_to_goal']}x the {GOAL_BYTES:,} byte goal) -> {path}"
    )


if __name__ == "__main__":
    main()
