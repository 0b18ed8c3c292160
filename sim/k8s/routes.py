"""The HTTP face of the API server: paths, verbs, query parameters, watch and log streams."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import orjson

from sim.k8s import admin, discovery, events_v1, openapi, protobuf
from sim.k8s.api import load_yaml_or_json, review
from sim.k8s.errors import ApiError
from sim.k8s.http import Request, Response, StreamResponse, UpgradeResponse
from sim.k8s.logs import log_options
from sim.k8s.portforward import portforward_upgrade
from sim.k8s.proxy import proxy
from sim.k8s.registry import ResourceType
from sim.k8s.remotecommand import exec_upgrade
from sim.k8s.selectors import check_field_selector, parse_field_selector, parse_label_selector
from sim.k8s.store import Watcher, WatchEvent
from sim.k8s.tables import to_table

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

Obj = dict[str, Any]
PUBLIC_PATHS = {"/version", "/healthz", "/livez", "/readyz"}


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(status, orjson.dumps(body), headers=headers or {})


def _error(exc: ApiError) -> Response:
    return _json(exc.code, exc.status(), exc.headers)


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


class Router:
    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self.api = server.api

    async def handle(self, req: Request) -> Response | StreamResponse | UpgradeResponse:
        try:
            return await self._handle(req)
        except ApiError as exc:
            return _error(exc)
        except Exception as exc:  # an emulator bug must still answer like a server
            self.server.log_internal_error(req, exc)
            return _error(ApiError(500, f"internal error: {type(exc).__name__}: {exc}"))

    def _authenticate(self, req: Request) -> None:
        auth = req.headers.get("authorization", "")
        if req.path in PUBLIC_PATHS:
            return
        if not auth.lower().startswith("bearer "):
            raise ApiError(401, "Unauthorized")
        problem = self.server.check_token(auth[7:].strip())
        if problem is not None:
            raise ApiError(401, "Unauthorized")

    async def _handle(self, req: Request) -> Response | StreamResponse | UpgradeResponse:
        self._authenticate(req)
        if req.path.startswith("/_sim/"):
            body = self._body(req) if req.body else {}
            return _json(200, admin.handle(self.server, req.method, req.path.rstrip("/"), body))
        self.server.faults.before_request(req)
        ctype = req.headers.get("content-type", "")
        if "protobuf" in ctype and req.body:
            req.body = orjson.dumps(protobuf.decode_body(req.body))
            req.headers["content-type"] = "application/json"
        elif "cbor" in ctype and (req.method == "DELETE" or req.path.endswith("/eviction")):
            req.body = b""  # delete options and evictions carry nothing the emulator needs
        elif "cbor" in ctype:
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - accepted media types include: "
                f"application/json, application/yaml (got {req.headers['content-type']})",
            )
        self.server.requests += 1
        path = req.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if path == "/version":
            return _json(200, discovery.version_info(self.server.kubernetes_version))
        if path in ("/healthz", "/livez", "/readyz"):
            return Response(200, b"ok", content_type="text/plain")
        if path == "/api":
            return _json(200, discovery.core_versions(f"{self.server.host}:{self.server.port}"))
        if path == "/apis":
            return _json(200, discovery.group_list(self.api.registry))
        if path == "/openapi/v2":
            protobuf_wanted = "protobuf" in req.headers.get("accept", "")
            document = openapi.v2_document(
                self.api.registry, self.server.kubernetes_version, protobuf_wanted
            )
            ctype = (
                "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
                if protobuf_wanted
                else "application/json"
            )
            return Response(200, document, content_type=ctype)
        if path == "/openapi/v3":
            return _json(200, openapi.index(self.api.registry))
        if parts[:2] == ["openapi", "v3"] and len(parts) >= 4:
            group, version = (
                ("", parts[3])
                if parts[2] == "api"
                else (parts[3], parts[4] if len(parts) > 4 else "")
            )
            doc = openapi.document(
                self.api.registry, group, version, self.server.kubernetes_version
            )
            if doc is None:
                raise ApiError(404, "the server could not find the requested resource")
            return _json(200, doc)
        if parts and parts[0] == "api" and len(parts) >= 2:
            return await self._group_version(req, "", parts[1], parts[2:])
        if parts and parts[0] == "apis" and len(parts) == 2:
            doc = discovery.group(self.api.registry, parts[1])
            if doc is None:
                raise ApiError(404, "the server could not find the requested resource")
            return _json(200, doc)
        if parts and parts[0] == "apis" and len(parts) >= 3:
            return await self._group_version(req, parts[1], parts[2], parts[3:])
        raise ApiError(404, "the server could not find the requested resource")

    async def _group_version(
        self, req: Request, group: str, version: str, rest: list[str]
    ) -> Response | StreamResponse | UpgradeResponse:
        registry = self.api.registry
        if not rest:
            doc = discovery.resource_list(registry, group, version)
            if doc is None:
                raise ApiError(404, "the server could not find the requested resource")
            return _json(200, doc)
        watch_path = rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        namespace = ""
        if rest and rest[0] == "namespaces" and len(rest) >= 3:
            candidate = registry.lookup(group, version, rest[2])
            if candidate is not None and candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        rt = registry.lookup(group, version, rest[0]) if rest else None
        if (
            rt is not None
            and not group
            and len(rest) >= 3
            and rest[2] == "proxy"
            and rt.plural in ("services", "pods")
        ):
            return proxy(self.server, req, rt.plural, namespace, rest[1], "/".join(rest[3:]))
        if rt is None or len(rest) > 3:
            raise ApiError(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub is not None and sub not in rt.subresources:
            raise ApiError(404, "the server could not find the requested resource")
        if rt.namespaced and name is not None and not namespace and rt.key != "namespaces":
            raise ApiError(404, "the server could not find the requested resource")
        if watch_path:
            req.query["watch"] = "true"
            if name is not None:
                req.query["fieldSelector"] = f"metadata.name={name}"
                name = None
        if rt.group == "events.k8s.io":
            return await self._events_v1(req, rt, namespace, name)
        return await self._resource(req, rt, namespace, name, sub)

    async def _events_v1(
        self, req: Request, rt: ResourceType, namespace: str, name: str | None
    ) -> Response | StreamResponse:
        """events.k8s.io/v1: the core Events, converted both ways."""
        core = self.api.registry.lookup("", "v1", "events")
        assert core is not None
        api, q = self.api, req.query
        dry_run = q.get("dryRun") == "All"
        manager = q.get("fieldManager") or req.headers.get("user-agent", "unknown").split("/")[0]
        if name is None and req.method == "GET":
            if _truthy(q.get("watch")):
                return await self._watch(req, core, namespace, view=(rt, events_v1.to_v1))
            listed = api.list_objects(
                core,
                namespace or None,
                q.get("labelSelector"),
                q.get("fieldSelector"),
                int(q["limit"]) if q.get("limit") else None,
                q.get("continue") or None,
            )
            items = [events_v1.to_v1(i) for i in listed["items"]]
            if self._wants_table(req):
                table = to_table(rt, items, q.get("includeObject", "Metadata"))
                table["metadata"] = listed["metadata"]
                return _json(200, table)
            return _json(
                200,
                {
                    "kind": "EventList",
                    "apiVersion": rt.group_version,
                    "metadata": listed["metadata"],
                    "items": items,
                },
            )
        if name is None and req.method == "POST":
            made = api.create(
                core,
                namespace,
                events_v1.to_core(self._body(req)),
                dry_run=dry_run,
                manager=manager,
            )
            return _json(201, events_v1.to_v1(made))
        if name is None:
            raise ApiError(405, f"method {req.method} not allowed")
        if req.method == "GET":
            return _json(200, events_v1.to_v1(api.get(core, namespace, name)))
        if req.method == "DELETE":
            return _json(200, api.delete(core, namespace, name, dry_run=dry_run))
        if req.method in ("PUT", "PATCH"):
            if req.method == "PUT":
                desired = self._body(req)
            else:
                current = events_v1.to_v1(api.get(core, namespace, name))
                ctype = req.headers.get("content-type", "application/merge-patch+json").split(";")[
                    0
                ]
                body = orjson.loads(req.body or b"{}")
                desired = api._apply_patch_type(core, ctype, current, body)
            updated = api.update(
                core, namespace, name, events_v1.to_core(desired), dry_run=dry_run, manager=manager
            )
            return _json(200, events_v1.to_v1(updated))
        raise ApiError(405, f"method {req.method} not allowed")

    # ---- verbs -------------------------------------------------------------------------

    async def _resource(
        self, req: Request, rt: ResourceType, namespace: str, name: str | None, sub: str | None
    ) -> Response | StreamResponse | UpgradeResponse:
        q = req.query
        method = req.method
        dry_run = q.get("dryRun") == "All"
        strict = q.get("fieldValidation", "").lower() == "strict"
        manager = q.get("fieldManager") or req.headers.get("user-agent", "unknown").split("/")[0]
        api = self.api
        if name is None:
            if method == "GET":
                if _truthy(q.get("watch")):
                    return await self._watch(req, rt, namespace)
                listed = api.list_objects(
                    rt,
                    namespace or None,
                    q.get("labelSelector"),
                    q.get("fieldSelector"),
                    int(q["limit"]) if q.get("limit") else None,
                    q.get("continue") or None,
                )
                if self._wants_table(req):
                    table = to_table(rt, listed["items"], q.get("includeObject", "Metadata"))
                    table["metadata"] = listed["metadata"]
                    return _json(200, table)
                return _json(200, listed)
            if method == "POST" and rt.kind == "SelfSubjectReview":
                return _json(201, self._self_review(req, rt))
            if method == "POST":
                created = api.create(
                    rt, namespace, self._body(req), dry_run=dry_run, strict=strict, manager=manager
                )
                return _json(201, created)
            if method == "DELETE":
                opts = self._delete_options(req)
                listed = api.delete_collection(
                    rt,
                    namespace or None,
                    q.get("labelSelector"),
                    q.get("fieldSelector"),
                    propagation=opts.get("propagationPolicy"),
                    dry_run=dry_run or "All" in (opts.get("dryRun") or []),
                )
                return _json(200, listed)
            raise ApiError(405, f"method {method} not allowed")
        if sub == "log":
            return await self._log(req, namespace, name)
        if sub == "exec" and rt.key == "pods" and method in ("GET", "POST"):
            return exec_upgrade(self.server, req, namespace, name)
        if sub == "portforward" and rt.key == "pods" and method in ("GET", "POST"):
            return portforward_upgrade(self.server, req, namespace, name)
        if sub == "scale":
            if method == "GET":
                return _json(200, api.get_scale(rt, namespace, name))
            if method == "PUT":
                return _json(
                    200, api.update_scale(rt, namespace, name, self._body(req), dry_run=dry_run)
                )
        if sub == "token" and method == "POST":
            return _json(201, self.server.tokens.issue(namespace, name, self._body(req)))
        if sub == "binding" and method == "POST":
            return _json(201, self.server.bind_pod(namespace, name, self._body(req)))
        if sub == "eviction" and method == "POST":
            api.delete(rt, namespace, name)
            return _json(
                201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
            )
        if method == "GET":
            obj = api.get(rt, namespace, name)
            if self._wants_table(req):
                return _json(200, to_table(rt, [obj], q.get("includeObject", "Metadata")))
            return _json(200, obj)
        if method == "PUT":
            body = self._body(req)
            updated = api.update(
                rt,
                namespace,
                name,
                body,
                subresource=sub,
                dry_run=dry_run,
                strict=strict,
                manager=manager,
            )
            return _json(200, updated)
        if method == "PATCH":
            ctype = req.headers.get("content-type", "application/merge-patch+json")
            existed = api.store.get(rt.key, namespace if rt.namespaced else "", name) is not None
            patched = api.patch(
                rt,
                namespace,
                name,
                ctype,
                req.body,
                subresource=sub,
                dry_run=dry_run,
                strict=strict,
                manager=q.get("fieldManager"),
                force=_truthy(q.get("force")),
            )
            return _json(200 if existed else 201, patched)
        if method == "DELETE":
            opts = self._delete_options(req)
            result = api.delete(
                rt,
                namespace,
                name,
                propagation=opts.get("propagationPolicy") or q.get("propagationPolicy"),
                preconditions=opts.get("preconditions"),
                dry_run=dry_run or "All" in (opts.get("dryRun") or []),
            )
            # as the real server: 202 only for a pending delete that asked for cascading explicitly
            pending = api.store.get(rt.key, namespace if rt.namespaced else "", name) is not None
            cascading = opts.get("orphanDependents") is False
            return _json(202 if pending and cascading and not dry_run else 200, result)
        raise ApiError(405, f"method {method} not allowed")

    def _self_review(self, req: Request, rt: ResourceType) -> Obj:
        """`kubectl auth whoami`: the caller the bearer token stands for."""
        out = review(rt, self._body(req))
        token = req.headers.get("authorization", "")[7:].strip()
        out["status"] = {"userInfo": self.server.user_of(token)}
        return out

    @staticmethod
    def _body(req: Request) -> Obj:
        try:
            body = orjson.loads(req.body or b"{}")
        except orjson.JSONDecodeError:
            try:
                body = load_yaml_or_json(req.body)
            except Exception as exc:
                raise ApiError(400, f"the body of the request could not be decoded: {exc}") from exc
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request must be an object")
        return body

    @staticmethod
    def _delete_options(req: Request) -> Obj:
        if not req.body:
            return {}
        try:
            opts = orjson.loads(req.body)
        except orjson.JSONDecodeError:
            return {}
        if opts.get("orphanDependents") is True:
            opts.setdefault("propagationPolicy", "Orphan")
        return opts if isinstance(opts, dict) else {}

    @staticmethod
    def _wants_table(req: Request) -> bool:
        accept = req.headers.get("accept", "")
        first = accept.split(",")[0]
        return "as=Table" in first

    # ---- watch ---------------------------------------------------------------------------

    async def _watch(
        self,
        req: Request,
        rt: ResourceType,
        namespace: str,
        view: tuple[ResourceType, Callable[[Obj], Obj]] | None = None,
    ) -> Response | StreamResponse:
        """Stream changes of `rt`; with `view`, shown as another resource (converted objects)."""
        q = req.query
        shown, convert = view if view is not None else (rt, None)
        labels = parse_label_selector(q.get("labelSelector"))
        check_field_selector(rt.key, q.get("fieldSelector"))
        fields = parse_field_selector(q.get("fieldSelector"))
        bookmarks = _truthy(q.get("allowWatchBookmarks"))
        send_initial = _truthy(q.get("sendInitialEvents"))
        rv = q.get("resourceVersion") or ""
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
        table = self._wants_table(req)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[WatchEvent] = asyncio.Queue()
        watcher = Watcher(loop, queue.put_nowait)
        initial = send_initial or rv in ("", "0")
        try:
            since = None if initial else int(rv)
        except ValueError as exc:
            raise ApiError(400, f"invalid resource version {rv!r}") from exc
        store = self.api.store
        gv = shown.group_version
        try:
            first = store.subscribe(rt.key, watcher, since, initial)
        except ApiError as exc:
            if exc.code != 410:
                raise
            body = orjson.dumps({"type": "ERROR", "object": exc.status()}) + b"\n"

            async def expired() -> AsyncIterator[bytes]:
                yield body

            return StreamResponse(200, expired())
        headers_sent = False

        def visible(obj: Obj) -> bool:
            meta = obj["metadata"]
            if namespace and meta.get("namespace") != namespace:
                return False
            return labels(obj) and fields(obj)

        def encode(event_type: str, event: WatchEvent | None, obj: Obj) -> bytes:
            nonlocal headers_sent
            if convert is not None:
                obj = convert(obj)
                event = None
            if table:
                doc = to_table(
                    shown, [obj], q.get("includeObject", "Metadata"), headers=not headers_sent
                )
                headers_sent = True
                return orjson.dumps({"type": event_type, "object": doc}) + b"\n"
            if event is not None and obj is event.obj and obj.get("apiVersion") == gv:
                data = event.encoded_object()
            else:
                data = orjson.dumps(
                    dict(obj, apiVersion=gv) if obj.get("apiVersion") != gv else obj
                )
            return b'{"type":"' + event_type.encode() + b'","object":' + data + b"}\n"

        def render(event: WatchEvent) -> bytes:
            now_visible = visible(event.obj)
            if event.type == "MODIFIED" and event.old is not None:
                was_visible = visible(event.old)
                if was_visible and not now_visible:
                    return encode("DELETED", None, event.obj)
                if now_visible and not was_visible:
                    return encode("ADDED", None, event.obj)
            if not now_visible:
                return b""
            return encode(event.type, event, event.obj)

        def bookmark(initial_end: bool = False) -> bytes:
            meta: Obj = {"resourceVersion": str(store.rv)}
            if initial_end:
                meta["annotations"] = {"k8s.io/initial-events-end": "true"}
            return (
                orjson.dumps(
                    {
                        "type": "BOOKMARK",
                        "object": {"kind": shown.kind, "apiVersion": gv, "metadata": meta},
                    }
                )
                + b"\n"
            )

        interval = self.server.bookmark_interval

        async def stream() -> AsyncIterator[bytes]:
            try:
                if first:
                    yield b"".join(render(e) for e in first)
                if send_initial and bookmarks:
                    yield bookmark(initial_end=True)
                start = loop.time()
                next_bookmark = start + interval
                while True:
                    now = loop.time()
                    wait = min(next_bookmark - now, 1.0)
                    if timeout is not None:
                        wait = min(wait, start + timeout - now)
                    event: WatchEvent | None = None
                    if wait > 0:
                        with contextlib.suppress(TimeoutError):
                            event = await asyncio.wait_for(queue.get(), timeout=wait)
                    if req.disconnected.is_set():
                        return
                    now = loop.time()
                    if event is not None:
                        batch = [event]
                        while not queue.empty():
                            batch.append(queue.get_nowait())
                        yield b"".join(render(e) for e in batch)
                    if timeout is not None and now >= start + timeout:
                        return
                    if bookmarks and now >= next_bookmark:
                        yield bookmark()
                    if now >= next_bookmark:
                        next_bookmark = now + interval
            finally:
                store.unsubscribe(rt.key, watcher)

        return StreamResponse(200, stream())

    # ---- logs ----------------------------------------------------------------------------

    async def _log(self, req: Request, namespace: str, name: str) -> Response | StreamResponse:
        q = req.query
        pods = self.api.registry.lookup("", "v1", "pods")
        assert pods is not None
        pod = self.api.get_raw(pods, namespace, name)
        containers = [c["name"] for c in pod["spec"].get("containers") or []]
        init = [c["name"] for c in pod["spec"].get("initContainers") or []]
        container = q.get("container")
        if not container:
            if len(containers) != 1:
                raise ApiError(
                    400,
                    f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]",
                )
            container = containers[0]
        if container not in containers + init:
            raise ApiError(400, f"container {container} is not valid for pod {name}")
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        state = next((s.get("state") or {} for s in statuses if s.get("name") == container), {})
        if not state or (
            "waiting" in state and not self.server.logs.lines(namespace, name, container)
        ):
            reason = (state.get("waiting") or {}).get("reason", "ContainerCreating")
            raise ApiError(
                400, f'container "{container}" in pod "{name}" is waiting to start: {reason}'
            )
        options = log_options(q, name)
        tail, since, limit_bytes = options.tail, options.since, options.limit_bytes
        previous = _truthy(q.get("previous"))
        restarts = next(
            (s.get("restartCount", 0) for s in statuses if s.get("name") == container), 0
        )
        if previous and not restarts:
            # the kubelet's answer (pkg/kubelet/kubelet_pods.go validateContainerLogStatus)
            raise ApiError(
                400, f'previous terminated container "{container}" in pod "{name}" not found'
            )
        timestamps = _truthy(q.get("timestamps"))
        logs = self.server.logs
        if _truthy(q.get("follow")) and not previous:
            chunks = logs.follow(
                namespace,
                name,
                container,
                tail=tail,
                since=since,
                timestamps=timestamps,
                disconnected=req.disconnected,
            )
            return StreamResponse(200, chunks, content_type="text/plain")
        data = logs.read(
            namespace,
            name,
            container,
            tail=tail,
            since=since,
            timestamps=timestamps,
            previous=previous,
            limit_bytes=limit_bytes,
        )
        return Response(200, data, content_type="text/plain")
