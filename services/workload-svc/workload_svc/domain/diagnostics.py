"""Diagnostics reads shaped into plain answers (pure): Kubernetes events, pods, log tails.

Events come as the API lists them (core/v1 Event objects); the answer is the newest `limit`,
newest last, each as {type, reason, message, object, count, first/last timestamp, source}.
A pod is {name, namespace, phase, status (kubectl's STATUS column: CrashLoopBackOff,
ImagePullBackOff, OOMKilled, ...), node, ready, restarts, containers}: each container with its
readiness, restart count, state and reason, and the last termination (reason, exit code) that a
restart left behind.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

KubeObject = dict[str, Any]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _timestamp(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return EPOCH
    text = value.replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return EPOCH
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _iso(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


# ---- events ------------------------------------------------------------------------------


def field_selector(kind: str | None, name: str | None, event_type: str | None) -> str | None:
    """The API server's field selector for events about one object and/or of one type."""
    terms = []
    if kind:
        terms.append(f"involvedObject.kind={kind}")
    if name:
        terms.append(f"involvedObject.name={name}")
    if event_type:
        terms.append(f"type={event_type}")
    return ",".join(terms) or None


def _last_seen(event: KubeObject) -> Any:
    series = event.get("series") or {}
    return (
        event.get("lastTimestamp")
        or series.get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )


def _first_seen(event: KubeObject) -> Any:
    return (
        event.get("firstTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or _last_seen(event)
    )


def event_view(event: KubeObject) -> dict[str, Any]:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    source = event.get("source") or {}
    series = event.get("series") or {}
    count = event.get("count") or series.get("count") or event.get("deprecatedCount") or 1
    return {
        "type": event.get("type"),
        "reason": event.get("reason"),
        "message": event.get("message") or event.get("note"),
        "object": {
            "kind": involved.get("kind"),
            "name": involved.get("name"),
            "namespace": involved.get("namespace"),
        },
        "count": int(count),
        "first_timestamp": _iso(_first_seen(event)),
        "last_timestamp": _iso(_last_seen(event)),
        "source": source.get("component")
        or event.get("reportingComponent")
        or event.get("reportingController")
        or None,
    }


def newest_events(events: list[KubeObject], limit: int) -> list[dict[str, Any]]:
    """The newest `limit` events, oldest of them first (newest last, as a log reads)."""
    ordered = sorted(
        events,
        key=lambda e: (
            _timestamp(_last_seen(e)),
            _timestamp(_first_seen(e)),
            str((e.get("metadata") or {}).get("name", "")),
        ),
    )
    return [event_view(e) for e in ordered[-limit:]] if limit > 0 else []


# ---- pods --------------------------------------------------------------------------------


def _exit_reason(terminated: dict[str, Any]) -> str:
    if terminated.get("reason"):
        return str(terminated["reason"])
    if terminated.get("signal"):
        return f"Signal:{terminated['signal']}"
    return f"ExitCode:{terminated.get('exitCode', 0)}"


def container_view(status: KubeObject, *, init: bool = False) -> dict[str, Any]:
    state = status.get("state") or {}
    last = (status.get("lastState") or {}).get("terminated")
    view: dict[str, Any] = {
        "name": status.get("name"),
        "init": init,
        "image": status.get("image"),
        "ready": bool(status.get("ready")),
        "restart_count": int(status.get("restartCount") or 0),
        "state": None,
        "reason": None,
        "message": None,
        "exit_code": None,
        "started_at": None,
        "last_termination": None,
    }
    if running := state.get("running"):
        view.update(state="running", started_at=_iso(running.get("startedAt")))
    elif (waiting := state.get("waiting")) is not None:
        view.update(state="waiting", reason=waiting.get("reason"), message=waiting.get("message"))
    elif (terminated := state.get("terminated")) is not None:
        view.update(
            state="terminated",
            reason=_exit_reason(terminated),
            message=terminated.get("message"),
            exit_code=terminated.get("exitCode"),
            started_at=_iso(terminated.get("startedAt")),
        )
    if last:
        view["last_termination"] = {
            "reason": _exit_reason(last),
            "exit_code": last.get("exitCode"),
            "message": last.get("message"),
            "started_at": _iso(last.get("startedAt")),
            "finished_at": _iso(last.get("finishedAt")),
        }
    return view


def pod_status(pod: KubeObject) -> str:
    """What `kubectl get pods` shows in its STATUS column."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    reason = str(status.get("reason") or status.get("phase") or "Unknown")
    initializing = False
    init_specs = spec.get("initContainers") or []
    for index, cs in enumerate(status.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        terminated = state.get("terminated")
        waiting = state.get("waiting")
        if terminated and terminated.get("exitCode") == 0:
            continue
        initializing = True
        if terminated:
            reason = "Init:" + _exit_reason(terminated)
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        break
    if not initializing:
        running = False
        for cs in reversed(status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            if (waiting := state.get("waiting")) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif (terminated := state.get("terminated")) is not None:
                reason = _exit_reason(terminated)
            elif state.get("running") and cs.get("ready"):
                running = True
        if reason == "Completed" and running:
            reason = "Running"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason


def pod_view(pod: KubeObject) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = [container_view(cs) for cs in status.get("containerStatuses") or []]
    inits = [container_view(cs, init=True) for cs in status.get("initContainerStatuses") or []]
    reported = {c["name"] for c in containers}
    # Containers the kubelet has not reported yet (the pod is not scheduled or pulling).
    for declared in spec.get("containers") or []:
        if declared.get("name") not in reported:
            containers.append(
                container_view({"name": declared.get("name"), "image": declared.get("image")})
            )
    owners = meta.get("ownerReferences") or []
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    ready = sum(1 for c in containers if c["ready"])
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "uid": meta.get("uid"),
        "phase": status.get("phase"),
        "status": pod_status(pod),
        "reason": status.get("reason"),
        "message": status.get("message"),
        "node": spec.get("nodeName"),
        "ready": f"{ready}/{len(containers)}",
        "restarts": sum(c["restart_count"] for c in [*inits, *containers]),
        "owner": {"kind": owner.get("kind"), "name": owner.get("name")} if owner else None,
        "created_at": _iso(meta.get("creationTimestamp")),
        "containers": [*inits, *containers],
    }


def pod_views(pods: list[KubeObject]) -> list[dict[str, Any]]:
    views = [pod_view(p) for p in pods]
    return sorted(views, key=lambda v: (str(v["namespace"] or ""), str(v["name"] or "")))


# ---- logs --------------------------------------------------------------------------------


def container_names(pod: KubeObject) -> list[str]:
    return [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]


def init_container_names(pod: KubeObject) -> list[str]:
    return [str(c.get("name")) for c in (pod.get("spec") or {}).get("initContainers") or []]


def default_container(pod: KubeObject) -> str | None:
    """The container `kubectl logs` reads without -c: the annotated default, else the first."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    chosen = annotations.get("kubectl.kubernetes.io/default-container")
    names = container_names(pod)
    if chosen in names:
        return str(chosen)
    return names[0] if names else None


def container_status(pod: KubeObject, container: str) -> KubeObject:
    status = pod.get("status") or {}
    for cs in [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]:
        if cs.get("name") == container:
            return dict(cs)
    return {}


def has_previous(pod: KubeObject, container: str) -> bool:
    """Whether an earlier instance of the container exists (so its log can be read): the
    container restarted in place at least once. A pod recreated under the same name (a training
    operator's restart) is a new pod: its containers have no previous instance."""
    return int(container_status(pod, container).get("restartCount") or 0) > 0


def tail_lines(text: str, tail: int, max_bytes: int) -> tuple[list[str], bool]:
    """The last `tail` complete-or-not lines of a log within `max_bytes` (UTF-8); whether lines
    were left out for the byte bound."""
    lines = text.splitlines()[-tail:] if tail > 0 else []
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line.encode("utf-8")) + 1
        if size > max_bytes:
            return list(reversed(kept)), True
        kept.append(line)
    return list(reversed(kept)), False
