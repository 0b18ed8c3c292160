"""Reads and synchronous requests answered over NATS request/reply: `qry.workload.<name>`.

- `plan`: the dry run of a workload command, from actual state (the workflows' own function);
- `job`: a job's live status, pods and (for Ray) the dashboard's address;
- `logs`: lines of one pod's log from a line number (the WebSocket and the download read them);
- `hf_token`: writes a Hugging Face token to a Kubernetes Secret and answers only its name.

Every reply is `{"ok": true, "data": ...}` or `{"ok": false, "error": {code, message, hint}}`.
Request bodies are never logged (one of them carries a token).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import ValidationError

from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.contracts.workloads import (
    NAMESPACE,
    CancelJob,
    CreateTrackingServer,
    DeleteJob,
    HfTokenRequest,
    HfTokenStored,
)
from shared.errors import StageError
from shared.logging import get_logger
from shared.operations import append_event
from workload_svc.access import Clusters, Kube
from workload_svc.domain.logs import LogPage, page
from workload_svc.domain.mlflow import TrackingServerApi, plan_tracking_server
from workload_svc.domain.status import observe, progress
from workload_svc.domain.workflows import plan_of

log = get_logger("workload_svc.queries")

QUEUE_GROUP = "workload-svc"
PLAN = query_subject("workload", "plan")
JOB = query_subject("workload", "job")
LOGS = query_subject("workload", "logs")
HF_TOKEN = query_subject("workload", "hf_token")
TRACKING_SERVER = query_subject("workload", "tracking_server")
MAX_LINES = 5000
MAX_BYTES = 512 * 1024
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")

Route = Callable[[dict[str, Any]], Awaitable[Any]]


class BadRequest(Exception):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _name(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not NAME.match(value):
        raise BadRequest(f"{key} is missing or not a valid name", f"pass {key} as a DNS name")
    return value


def _error(code: str, message: str, hint: str | None) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "hint": hint}}


class Responder:
    def __init__(
        self, nc: NATS, pool: asyncpg.Pool, clusters: Clusters, servers: TrackingServerApi
    ) -> None:
        self.nc = nc
        self.servers = servers
        self.pool = pool
        self.clusters = clusters
        self._subscriptions: list[Subscription] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self.routes: dict[str, Route] = {
            PLAN: self.plan,
            JOB: self.job,
            LOGS: self.logs,
            HF_TOKEN: self.hf_token,
            TRACKING_SERVER: self.tracking_server,
        }

    async def start(self) -> None:
        for subject in self.routes:
            self._subscriptions.append(
                await self.nc.subscribe(subject, queue=QUEUE_GROUP, cb=self._on_message)
            )
        await self.nc.flush()

    async def stop(self) -> None:
        for subscription in self._subscriptions:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
        self._subscriptions.clear()
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)

    async def _on_message(self, msg: Msg) -> None:
        task = asyncio.create_task(self._reply(msg))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _reply(self, msg: Msg) -> None:
        body = await self.answer(msg.subject, msg.data)
        if msg.reply:
            try:
                await msg.respond(orjson.dumps(body))
            except Exception as exc:
                log.warning("query reply failed", subject=msg.subject, error=type(exc).__name__)

    async def answer(self, subject: str, data: bytes) -> dict[str, Any]:
        route = self.routes.get(subject)
        if route is None:
            return _error("unknown_query", f"no query {subject}", ", ".join(self.routes))
        try:
            request = orjson.loads(data) if data else {}
            if not isinstance(request, dict):
                raise BadRequest("the request must be a JSON object", "send a JSON object")
            return {"ok": True, "data": await route(request)}
        except orjson.JSONDecodeError:
            return _error("invalid_request", "the request is not JSON", "send a JSON object")
        except BadRequest as exc:
            return _error("invalid_request", exc.message, exc.hint)
        except ValidationError as exc:
            errors = exc.errors()
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
            what = errors[0]["msg"] if errors else "invalid"
            return _error("invalid_request", f"{where}: {what}", None)
        except StageError as exc:
            return _error(exc.code, exc.message, exc.hint)
        except Exception as exc:
            # Neither the request nor the exception text: either may carry a token.
            log.error("query failed", subject=subject, error=type(exc).__name__)
            return _error(
                "internal_error", f"{type(exc).__name__} answering {subject}", "retry shortly"
            )

    # ---- routes --------------------------------------------------------------------------

    async def plan(self, request: dict[str, Any]) -> Any:
        command_type = request.get("type")
        payload = request.get("payload")
        if not isinstance(payload, dict):
            raise BadRequest("payload is required", "send the command as a JSON object")
        if command_type == "CreateTrackingServer":
            spec = CreateTrackingServer.from_payload(payload).spec
            actual = await self.servers.describe(spec.name)
            return plan_tracking_server(spec, actual).model_dump(mode="json")
        if command_type in ("SubmitJob", "DownloadModel"):
            return (await plan_of(self.clusters, payload)).model_dump(mode="json")
        if command_type in ("CancelJob", "DeleteJob"):
            command = (CancelJob if command_type == "CancelJob" else DeleteJob).from_payload(
                payload
            )
            job = await self.clusters.recorded(command.cluster, command.name)
            target = f"{command.cluster}/jobs/{command.name}"
            terminal = job is None or (
                command_type == "CancelJob"
                and job["status"] in ("succeeded", "failed", "cancelled")
            )
            if terminal or job is None:
                return Plan(command=str(command_type), target=target, noop=True).model_dump(
                    mode="json"
                )
            return Plan(
                command=str(command_type),
                target=target,
                noop=False,
                objects=[
                    {
                        "action": "delete",
                        "api_version": job["api_version"],
                        "kind": job["kind"],
                        "name": command.name,
                        "namespace": NAMESPACE,
                    }
                ],
            ).model_dump(mode="json")
        raise BadRequest(
            f"no dry run for {command_type}",
            "dry_run is answered for: CancelJob, CreateTrackingServer, DeleteJob,"
            " DownloadModel, SubmitJob",
        )

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
        obj = await kube.get(job["api_version"], job["kind"], name, NAMESPACE)
        pods = await self.clusters.pods_of(kube, name)
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
                "port_forward": f"kubectl port-forward -n {NAMESPACE} svc/{service} {port}:{port}",
                "proxy": f"/api/v1/namespaces/{NAMESPACE}/services/{service}:{port}/proxy/",
            }
        if job["recipe"] == "model-download" and pods:
            text = await kube.pod_log(NAMESPACE, pods[-1]["metadata"]["name"])
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
        if tail is not None and (not isinstance(tail, int) or tail < 0):
            raise BadRequest("tail must be a whole number", "tail >= 0: the last lines to send")
        if not isinstance(start, int) or start < 0 or not isinstance(limit, int) or limit < 1:
            raise BadRequest("from and limit must be whole numbers", "from >= 0, limit >= 1")
        await self._job(cluster, name)
        kube = await self.clusters.kube(cluster)
        found = await self._pod(kube, name, pod)
        text = await kube.pod_log(NAMESPACE, pod)
        result: LogPage = page(
            text,
            start=start,
            tail=tail,
            limit=min(limit, MAX_LINES),
            max_bytes=MAX_BYTES,
            uid=found["metadata"].get("uid"),
            known_uid=uid if isinstance(uid, str) else None,
            running=((found.get("status") or {}).get("phase") in ("Pending", "Running")),
        )
        answer = result.as_dict()
        answer["phase"] = (found.get("status") or {}).get("phase")
        return answer

    async def _pod(self, kube: Kube, job: str, pod: str) -> dict[str, Any]:
        for found in await self.clusters.pods_of(kube, job):
            if found["metadata"]["name"] == pod:
                return found
        raise StageError(
            "PodNotFound",
            f"job {job} has no pod {pod}",
            "GET /api/v1/clusters/{name}/jobs/{job} lists the job's pods",
        )

    async def hf_token(self, request: dict[str, Any]) -> Any:
        cluster = _name(request, "cluster")
        body = HfTokenRequest.model_validate(
            {k: v for k, v in request.items() if k in ("token", "secret")}
        )
        kube = await self.clusters.kube(cluster)
        await kube.put_secret(NAMESPACE, body.secret, {"token": body.token})
        async with self.pool.acquire() as conn, conn.transaction():
            await append_event(
                conn,
                operation_id=None,
                domain="workload",
                event=HfTokenStored(cluster=cluster, secret=body.secret),
                principal=str(request.get("principal") or "system"),
                source=str(request.get("source") or "rest"),
            )
        return {"secret": body.secret, "namespace": NAMESPACE, "key": "token"}

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


__all__ = ["HF_TOKEN", "JOB", "LOGS", "PLAN", "Responder"]
