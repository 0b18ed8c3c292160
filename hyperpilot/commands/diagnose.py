"""`hyperpilot diagnose`: read a cluster's Kubernetes state: events, pods, container logs
(also the log from before a container's last restart). Reads only: nothing here changes a
cluster, and a viewer token is enough."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from hyperpilot.commands.common import (
    Area,
    Cluster,
    Output,
    active_cluster,
    client,
    examples,
    fmt,
)
from hyperpilot.output import Column, Format, emit, table
from shared.boundary import api_path

app = Area(
    "diagnose",
    "Diagnostics reads: Kubernetes events, pods with their restarts and last termination,"
    " container logs (also before the last restart).",
)


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


def _object(event: dict[str, Any]) -> str:
    found = event.get("object") or {}
    return f"{found.get('kind') or '?'}/{found.get('name') or '?'}"


def _last_termination(pod: dict[str, Any]) -> str | None:
    """The most telling way a container of the pod last ended: `OOMKilled (137)`."""
    for container in pod.get("containers") or []:
        last = container.get("last_termination") or (
            {"reason": container.get("reason"), "exit_code": container.get("exit_code")}
            if container.get("state") == "terminated"
            else None
        )
        if last and (last.get("reason") or last.get("exit_code") is not None):
            code = last.get("exit_code")
            return f"{last.get('reason') or 'exited'}" + (f" ({code})" if code is not None else "")
    return None


EVENT_COLUMNS = [
    Column("LAST SEEN", "last_timestamp"),
    Column("TYPE", "type"),
    Column("REASON", "reason"),
    Column("OBJECT", _object),
    Column("NAMESPACE", "object.namespace"),
    Column("COUNT", "count"),
    Column("MESSAGE", "message", wrap=True),
]
POD_COLUMNS = [
    Column("NAMESPACE", "namespace"),
    Column("POD", "name"),
    Column("READY", "ready"),
    Column("STATUS", "status"),
    Column("RESTARTS", "restarts"),
    Column("LAST TERMINATION", _last_termination),
    Column("NODE", "node"),
    Column("CREATED", "created_at"),
]


def _base(cluster: str) -> str:
    return api_path("clusters", cluster)


@app.command(
    epilog=examples(
        "hyperpilot diagnose events --type Warning",
        "hyperpilot diagnose events -n default --kind Pod --object llama-sft-pod-0",
        "hyperpilot diagnose events -n kube-system --limit 20 -o json",
    )
)
def events(
    cluster: Cluster = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="Only this namespace (all if omitted)"),
    ] = None,
    kind: Annotated[
        str | None, typer.Option(help="Only events about objects of this kind, e.g. Pod, Node")
    ] = None,
    object_name: Annotated[
        str | None, typer.Option("--object", help="Only events about the object of this name")
    ] = None,
    event_type: Annotated[
        EventType | None, typer.Option("--type", help="Normal or Warning (both if omitted)")
    ] = None,
    limit: Annotated[int, typer.Option(help="The newest this many events", min=1)] = 100,
    output: Output = None,
) -> None:
    """Kubernetes events of the cluster, newest last.

    Scheduling, image pulls, container exits and back-offs, node conditions, operators'
    restarts; filter by namespace, object and type (start with --type Warning).
    """
    with client() as api:
        answer = api.get(
            f"{_base(active_cluster(api, cluster))}/kubernetes-events",
            namespace=namespace,
            kind=kind,
            object=object_name,
            type=event_type.value if event_type else None,
            limit=limit,
        )
    emit(
        answer,
        fmt(output),
        lambda a: table(a["events"], EVENT_COLUMNS) if a.get("events") else "(no events)",
    )


@app.command(
    epilog=examples(
        "hyperpilot diagnose pods",
        "hyperpilot diagnose pods -l hyperpilot.dev/job=llama-sft",
        "hyperpilot diagnose pods -A -o yaml",
        "hyperpilot diagnose pods -n kube-system",
    )
)
def pods(
    cluster: Cluster = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The namespace (training jobs: default)")
    ] = "default",
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="Pods of every namespace")
    ] = False,
    selector: Annotated[
        str | None,
        typer.Option("--selector", "-l", help="A label selector, e.g. app=web,tier in (a,b)"),
    ] = None,
    output: Output = None,
) -> None:
    """Pods with their status, restarts, last termination and node.

    STATUS is kubectl's (CrashLoopBackOff, ImagePullBackOff, OOMKilled...); LAST TERMINATION
    is how a container last ended (reason and exit code); -o yaml shows each container's state.
    """
    with client() as api:
        answer = api.get(
            f"{_base(active_cluster(api, cluster))}/pods",
            namespace="*" if all_namespaces else namespace,
            selector=selector,
        )
    emit(
        answer,
        fmt(output),
        lambda a: table(a["pods"], POD_COLUMNS) if a.get("pods") else "(no pods)",
    )


@app.command(
    epilog=examples(
        "hyperpilot diagnose logs web-7c9d -n default",
        "hyperpilot diagnose logs web-7c9d --previous --tail 100",
        "hyperpilot diagnose logs aws-node-x2x4 -n kube-system --container aws-node",
    )
)
def logs(
    pod: Annotated[str, typer.Argument(help="Pod name", show_default=False)],
    cluster: Cluster = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The pod's namespace")
    ] = "default",
    container: Annotated[
        str | None, typer.Option(help="The container (the pod's default container if omitted)")
    ] = None,
    tail: Annotated[int, typer.Option(help="The last this many lines", min=1)] = 500,
    previous: Annotated[
        bool,
        typer.Option(
            "--previous", "-p", help="The log of the container's instance before its last restart"
        ),
    ] = False,
    output: Output = None,
) -> None:
    """The last lines of a container's log, or (--previous) those before its last restart.

    A crashed container's error is usually at the end of its previous log. Table output is the
    log text itself; -o json|yaml adds the container and its restart count.
    """
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/pods/{namespace}/{pod}/logs"
        response = api.send(
            "GET",
            path,
            params={
                "container": container,
                "tail": tail,
                "previous": "true" if previous else None,
            },
        )
    text = response.text
    chosen = response.headers.get("X-Container", container)
    restarts = response.headers.get("X-Restart-Count", "")
    if fmt(output) is Format.TABLE:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    emit(
        {
            "namespace": namespace,
            "pod": pod,
            "container": chosen,
            "previous": previous,
            "restart_count": int(restarts) if restarts.isdigit() else None,
            "lines": text.splitlines(),
        },
        fmt(output),
    )
