"""The UI's pod terminal, answered here a line at a time (`qry.workload.exec`): the line runs in
the pod's container through the `pods/exec` subresource and the answer is its output and exit
code. The gateway authorizes (operators only) and audits the session; a line is never logged."""

from __future__ import annotations

import re
from typing import Any

from shared.contracts.subjects import query_subject
from shared.queries import BadRequest
from shared.service import Area
from workload_svc.adapters.pod_exec import run_line
from workload_svc.spaces import SpaceClusters

EXEC = query_subject("workload", "exec")
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
MAX_LINE = 4096


def _name(request: dict[str, Any], key: str, *, optional: bool = False) -> str | None:
    value = request.get(key)
    if optional and value in (None, ""):
        return None
    if not isinstance(value, str) or not NAME.match(value):
        raise BadRequest(f"{key} is missing or not a valid name", f"pass {key} as a DNS name")
    return value


class Terminal:
    def __init__(self, clusters: SpaceClusters) -> None:
        self.clusters = clusters

    async def exec(self, request: dict[str, Any]) -> dict[str, Any]:
        cluster = _name(request, "cluster") or ""
        namespace = _name(request, "namespace") or ""
        pod = _name(request, "pod") or ""
        container = _name(request, "container", optional=True)
        line = request.get("line")
        if not isinstance(line, str) or not line.strip() or len(line) > MAX_LINE:
            raise BadRequest(
                f"line is empty or longer than {MAX_LINE} characters", "send one command line"
            )
        kube = await self.clusters.kube(cluster)
        answer = await run_line(kube, namespace, pod, container, line)
        return {"output": answer.output, "exit_code": answer.exit_code}

    def area(self) -> Area:
        return Area(read_routes={EXEC: self.exec})
