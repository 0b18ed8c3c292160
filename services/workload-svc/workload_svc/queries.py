"""Reads and synchronous requests answered over NATS request/reply: `qry.workload.<name>`.

- `plan`: the dry run of a workload command, from actual state (the workflows' own function;
  `planners`, one per command type, are answered through `shared.service.plan_route`);
- `job`: a job's live status, pods and (for Ray) the dashboard's address;
- `logs`: lines of one pod's log from a line number (the WebSocket and the download read them),
  or (`previous`) of its container's instance before the last restart;
- `kube_events`, `pods`, `pod_logs`: diagnostics reads of any namespace: Kubernetes events
  (newest last), pods with their containers' states and restarts, the tail of a container's
  current or previous log (`shared.contracts.diagnostics`);
- `hf_token`: writes a Hugging Face token to a Kubernetes Secret and answers only its name;
- `store_secret`: writes (creates or replaces) a Kubernetes Secret in the jobs' namespace from
  a name and key -> value data, and answers its name and keys only;
- `secrets`: the jobs' namespace's Secrets: names, types and keys, never a value.

Every reply is `{"ok": true, "data": ...}` or `{"ok": false, "error": {code, message, hint}}`.
Request bodies are never logged (`hf_token` and `store_secret` carry secrets).
"""

from __future__ import annotations

import re
from typing import Any

import asyncpg

from shared.boundary import shell_line, url_path
from shared.contracts.diagnostics import ALL_NAMESPACES, KubeEventsQuery, PodLogsQuery, PodsQuery
from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.contracts.workloads import (
    NAMESPACE,
    TERMINAL_STATUSES,
    CancelJob,
    CreateTrackingServer,
    DeleteJob,
    DownloadModel,
    HfTokenRequest,
    HfTokenStored,
    SecretStored,
    StoreSecretRequest,
    SubmitJob,
)
from shared.errors import StageError
from shared.logging import get_logger
from shared.queries import BadRequest, Route
from shared.service import Planner
from workload_svc import records
from workload_svc.access import Clusters, Kube
from workload_svc.domain import diagnostics
from workload_svc.domain.logs import LogPage, page
from workload_svc.domain.mlflow import TrackingServerApi, plan_tracking_server
from workload_svc.domain.status import newest_pod, observe, progress
from workload_svc.domain.workflows import plan_of

log = get_logger("workload_svc.queries")

JOB = query_subject("workload", "job")
LOGS = query_subject("workload", "logs")
HF_TOKEN = query_subject("workload", "hf_token")
STORE_SECRET = query_subject("workload", "store_secret")
SECRETS = query_subject("workload", "secrets")
TRACKING_SERVER = query_subject("workload", "tracking_server")
KUBE_EVENTS = query_subject("workload", "kube_events")
PODS = query_subject("workload", "pods")
POD_LOGS = query_subject("workload", "pod_logs")
MAX_LINES = 5000
MAX_BYTES = 512 * 1024
MAX_EVENTS_SCANNED = 5000  # events read from the API server to pick the newest from
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _name(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not NAME.match(value):
        raise BadRequest(f"{key} is missing or not a valid name", f"pass {key} as a DNS name")
    return value


def _only(request: dict[str, Any], fields: Any) -> dict[str, Any]:
    """The request's fields a query model knows (the principal and source travel beside)."""
    return {k: v for k, v in request.items() if k in fields}


def _who(request: dict[str, Any]) -> tuple[str, str]:
    """(principal, source) of a request, as the gateway sends them."""
    return str(request.get("principal") or "system"), str(request.get("source") or "rest")


def _require_previous(pod: dict[str, Any], container: str | None, what: str) -> None:
    if container is not None and diagnostics.has_previous(pod, container):
        return
    status = diagnostics.container_status(pod, container or "")
    stopped = ((status.get("lastState") or {}).get("terminated")) is not None
    raise StageError(
        "PreviousLogNotFound",
        f"{what}: container {container} has not restarted, so it has no previous log",
        "its current log is the one that stopped; read it without previous"
        if stopped
        else "read the current log; a pod recreated under the same name (a training restart)"
        " starts with no previous log: the job's events and faulty pods tell what happened",
    )


class Reads:
    """The workload queries and dry runs, over the recorded jobs and their clusters."""

    def __init__(self, pool: asyncpg.Pool, clusters: Clusters, servers: TrackingServerApi) -> None:
        self.servers = servers
        self.pool = pool
        self.clusters = clusters

    def routes(self) -> dict[str, Route]:
        return {
            JOB: self.job,
            LOGS: self.logs,
            HF_TOKEN: self.hf_token,
            STORE_SECRET: self.store_secret,
            SECRETS: self.secrets,
            TRACKING_SERVER: self.tracking_server,
            KUBE_EVENTS: self.kube_events,
            PODS: self.pods,
            POD_LOGS: self.pod_logs,
        }

    def planners(self) -> dict[str, Planner]:
        return {
            SubmitJob.__name__: self.plan_submit,
            DownloadModel.__name__: self.plan_download,
            CancelJob.__name__: self.plan_cancel,
            DeleteJob.__name__: self.plan_delete,
            CreateTrackingServer.__name__: self.plan_tracking_server,
        }

    # ---- dry runs ------------------------------------------------------------------------

    async def plan_submit(self, payload: dict[str, Any]) -> Plan:
        return await plan_of(self.clusters, SubmitJob.from_payload(payload))

    async def plan_download(self, payload: dict[str, Any]) -> Plan:
        return await plan_of(self.clusters, DownloadModel.from_payload(payload))

    async def plan_tracking_server(self, payload: dict[str, Any]) -> Plan:
        spec = CreateTrackingServer.from_payload(payload).spec
        return plan_tracking_server(spec, await self.servers.describe(spec.name))

    async def plan_cancel(self, payload: dict[str, Any]) -> Plan:
        return await self._plan_stop(CancelJob.from_payload(payload))

    async def plan_delete(self, payload: dict[str, Any]) -> Plan:
        return await self._plan_stop(DeleteJob.from_payload(payload))

    async def _plan_stop(self, command: CancelJob | DeleteJob) -> Plan:
        command_type = type(command).__name__
        job = await self.clusters.recorded(command.cluster, command.name)
        target = f"{command.cluster}/jobs/{command.name}"
        if job is None or (isinstance(command, CancelJob) and job["status"] in TERMINAL_STATUSES):
            return Plan(command=command_type, target=target, noop=True)
        return Plan(
            command=command_type,
            target=target,
            noop=False,
            objects=[
                {
                    "action": "delete",
                    "api_version": job["api_version"],
                    "kind": job["kind"],
                    "name": command.name,
                    "namespace": job.get("namespace") or NAMESPACE,
                }
            ],
        )

    # ---- reads ---------------------------------------------------------------------------

    async def _job(self, cluster: str, name: str) -> dict[str, Any]:
        job = await self.clusters.recorded(cluster, name)
        if job is None:
            raise StageError(
                "JobNotFound",
                f"job {name} is not known on cluster {cluster}",
                "GET /api/v1/clusters/{name}/jobs lists the jobs",
            )
        return job

    async def job(self, request: dict[str, Any]) -> Any:
        cluster, name = _name(request, "cluster"), _name(request, "name")
        job = await self._job(cluster, name)
        kube = await self.clusters.kube(cluster)
        namespace = job.get("namespace") or NAMESPACE
        obj = await kube.get(job["api_version"], job["kind"], name, namespace)
        pods = await self.clusters.pods_of(kube, name, namespace)
        seen = observe(job["kind"], obj, pods)
        answer: dict[str, Any] = {
            "exists": obj is not None,
            "observed": seen.as_dict() if seen is not None else None,
            "conditions": ((obj or {}).get("status") or {}).get("conditions") or [],
        }
        if job["kind"] == "RayJob" and seen is not None and seen.dashboard:
            host, _, port = seen.dashboard.rpartition(":")
            service = host.split(".", 1)[0]
            answer["ray_dashboard"] = {
                "in_cluster": f"http://{seen.dashboard}",
                # a line to paste into a shell; the service and port are the cluster's words
                "port_forward": shell_line(
                    ["kubectl", "port-forward", "-n", namespace, f"svc/{service}", f"{port}:{port}"]
                ),
                "proxy": url_path(
                    "api", "v1", "namespaces", namespace, "services", f"{service}:{port}", "proxy"
                )
                + "/",
            }
        if job["recipe"] == "model-download" and (current := newest_pod(pods)) is not None:
            text = await kube.pod_log(namespace, current["metadata"]["name"])
            answer["progress"] = progress(text.splitlines()[-50:])
        return answer

    async def logs(self, request: dict[str, Any]) -> Any:
        cluster, name, pod = (
            _name(request, "cluster"),
            _name(request, "job"),
            _name(request, "pod"),
        )
        start = request.get("from", 0)
        limit = request.get("limit", MAX_LINES)
        uid = request.get("uid")
        tail = request.get("tail")
        previous = request.get("previous", False)
        if tail is not None and (not isinstance(tail, int) or tail < 0):
            raise BadRequest("tail must be a whole number", "tail >= 0: the last lines to send")
        if not isinstance(start, int) or start < 0 or not isinstance(limit, int) or limit < 1:
            raise BadRequest("from and limit must be whole numbers", "from >= 0, limit >= 1")
        if not isinstance(previous, bool):
            raise BadRequest(
                "previous must be true or false",
                "previous: true reads the log of the container's instance before its last restart",
            )
        namespace = (await self._job(cluster, name)).get("namespace") or NAMESPACE
        kube = await self.clusters.kube(cluster)
        found = await self._pod(kube, name, pod, namespace)
        if previous:
            container = diagnostics.default_container(found)
            _require_previous(found, container, f"pod {pod} of job {name}")
            text = await kube.pod_log(namespace, pod, container, previous=True)
        else:
            text = await kube.pod_log(namespace, pod)
        result: LogPage = page(
            text,
            start=start,
            tail=tail,
            limit=min(limit, MAX_LINES),
            max_bytes=MAX_BYTES,
            uid=found["metadata"].get("uid"),
            known_uid=uid if isinstance(uid, str) and not previous else None,
            running=(
                not previous and (found.get("status") or {}).get("phase") in ("Pending", "Running")
            ),
        )
        answer = result.as_dict()
        answer["phase"] = (found.get("status") or {}).get("phase")
        answer["previous"] = bool(previous)
        return answer

    async def _pod(
        self, kube: Kube, job: str, pod: str, namespace: str = NAMESPACE
    ) -> dict[str, Any]:
        for found in await self.clusters.pods_of(kube, job, namespace):
            if found["metadata"]["name"] == pod:
                return found
        raise StageError(
            "PodNotFound",
            f"job {job} has no pod {pod}",
            "GET /api/v1/clusters/{name}/jobs/{job} lists the job's pods",
        )

    # ---- diagnostics: any namespace, read-only -------------------------------------------

    async def kube_events(self, request: dict[str, Any]) -> Any:
        query = KubeEventsQuery.model_validate(_only(request, KubeEventsQuery.model_fields))
        namespace = None if query.namespace in (None, ALL_NAMESPACES) else query.namespace
        kube = await self.clusters.kube(query.cluster, any_status=True)
        found = await kube.events(
            namespace,
            diagnostics.field_selector(query.kind, query.object, query.type),
            MAX_EVENTS_SCANNED,
        )
        events = diagnostics.newest_events(found, query.limit)
        return {
            "cluster": query.cluster,
            "namespace": namespace or ALL_NAMESPACES,
            "events": events,
            "matched": len(found),
            "scanned_all": len(found) < MAX_EVENTS_SCANNED,
        }

    async def pods(self, request: dict[str, Any]) -> Any:
        query = PodsQuery.model_validate(_only(request, PodsQuery.model_fields))
        namespace = None if query.namespace == ALL_NAMESPACES else query.namespace
        kube = await self.clusters.kube(query.cluster, any_status=True)
        found = await kube.pods_in(namespace, query.selector)
        return {
            "cluster": query.cluster,
            "namespace": query.namespace,
            "selector": query.selector,
            "pods": diagnostics.pod_views(found),
        }

    async def pod_logs(self, request: dict[str, Any]) -> Any:
        query = PodLogsQuery.model_validate(_only(request, PodLogsQuery.model_fields))
        kube = await self.clusters.kube(query.cluster, any_status=True)
        found = await kube.pod(query.namespace, query.pod)
        if found is None:
            raise StageError(
                "PodNotFound",
                f"namespace {query.namespace} of cluster {query.cluster} has no pod {query.pod}",
                f"GET /api/v1/clusters/{query.cluster}/pods?namespace={query.namespace}"
                " lists its pods",
            )
        names = diagnostics.container_names(found) + diagnostics.init_container_names(found)
        container = query.container or diagnostics.default_container(found)
        if container is None or container not in names:
            raise BadRequest(
                f"container: pod {query.pod} has no container {container}",
                f"use one of: {', '.join(names) or '(none)'}",
            )
        if query.previous:
            _require_previous(found, container, f"pod {query.pod}")
        text = await kube.pod_log(
            query.namespace, query.pod, container, previous=query.previous, tail=query.tail
        )
        lines, truncated = diagnostics.tail_lines(text, query.tail, MAX_BYTES)
        status = diagnostics.container_status(found, container)
        return {
            "cluster": query.cluster,
            "namespace": query.namespace,
            "pod": query.pod,
            "container": container,
            "containers": names,
            "previous": query.previous,
            "restart_count": int(status.get("restartCount") or 0),
            "lines": lines,
            "truncated": truncated,
        }

    async def hf_token(self, request: dict[str, Any]) -> Any:
        cluster = _name(request, "cluster")
        body = HfTokenRequest.model_validate(
            {k: v for k, v in request.items() if k in ("token", "secret")}
        )
        kube = await self.clusters.kube(cluster)
        await kube.put_secret(NAMESPACE, body.secret, {"token": body.token})
        await records.secret_written(
            self.pool, HfTokenStored(cluster=cluster, secret=body.secret), *_who(request)
        )
        return {"secret": body.secret, "namespace": NAMESPACE, "key": "token"}

    async def store_secret(self, request: dict[str, Any]) -> Any:
        cluster = _name(request, "cluster")
        body = StoreSecretRequest.model_validate(_only(request, ("name", "data")))
        kube = await self.clusters.kube(cluster)
        await kube.put_secret(NAMESPACE, body.name, dict(body.data))
        keys = sorted(body.data)
        stored = SecretStored(cluster=cluster, secret=body.name, namespace=NAMESPACE, keys=keys)
        await records.secret_written(self.pool, stored, *_who(request))
        return {"secret": body.name, "namespace": NAMESPACE, "keys": keys}

    async def secrets(self, request: dict[str, Any]) -> Any:
        cluster = _name(request, "cluster")
        kube = await self.clusters.kube(cluster, any_status=True)
        return {
            "cluster": cluster,
            "namespace": NAMESPACE,
            "secrets": await kube.secret_keys(NAMESPACE),
        }

    async def tracking_server(self, request: dict[str, Any]) -> Any:
        name = request.get("name")
        if not isinstance(name, str) or not re.match(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$", name):
            raise BadRequest("name is missing or not valid", "pass the tracking server's name")
        found = await self.servers.describe(name)
        if found is None:
            raise StageError(
                "TrackingServerNotFound",
                f"tracking server {name} does not exist",
                "POST /api/v1/mlflow/tracking-servers creates one",
            )
        return {
            "name": found.get("TrackingServerName"),
            "arn": found.get("TrackingServerArn"),
            "status": found.get("TrackingServerStatus"),
            "active": found.get("IsActive"),
            "url": found.get("TrackingServerUrl"),
            "artifact_store_uri": found.get("ArtifactStoreUri"),
            "size": found.get("TrackingServerSize"),
            "mlflow_version": found.get("MlflowVersion"),
            "tracking_uri": found.get("TrackingServerArn"),
        }


__all__ = [
    "HF_TOKEN",
    "JOB",
    "KUBE_EVENTS",
    "LOGS",
    "PODS",
    "POD_LOGS",
    "SECRETS",
    "STORE_SECRET",
    "Reads",
]
