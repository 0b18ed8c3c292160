"""Live reads answered over NATS request/reply: `qry.cluster.<name>`.

Reads are not commands: nothing is persisted and a lost reply is simply asked again, so they use
plain request/reply (a queue group spreads them over the running cluster-svc replicas) rather
than JetStream. Every reply is `{"ok": true, "data": ...}` or
`{"ok": false, "error": {"code", "message", "hint"}}`; AWS failures keep AWS's code and message.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import ValidationError

from cluster_svc.domain.inspection import Problem
from shared.contracts.cluster import ML_INSTANCE_PATTERN, ZONE_ID_PATTERN, ClusterSpec
from shared.contracts.subjects import query_subject
from shared.errors import StageError, TemporaryError
from shared.logging import get_logger

log = get_logger("cluster_svc.queries")

QUEUE_GROUP = "cluster-svc"
AVAILABILITY_ZONES = query_subject("cluster", "availability_zones")
INSTANCE_TYPES = query_subject("cluster", "instance_types")
QUOTAS = query_subject("cluster", "quotas")
TRAINING_PLANS = query_subject("cluster", "training_plans")
CLUSTERS = query_subject("cluster", "clusters")
CHECK_CREATE = query_subject("cluster", "check_create")
SUBJECTS = (AVAILABILITY_ZONES, INSTANCE_TYPES, QUOTAS, TRAINING_PLANS, CLUSTERS, CHECK_CREATE)


class Inspecting(Protocol):
    """What the responder asks of the inspector (`adapters.inspect.Inspector`)."""

    @property
    def region(self) -> str: ...

    async def availability_zones(self) -> list[dict[str, Any]]: ...

    async def instance_types(
        self, availability_zone_id: str | None = None
    ) -> list[dict[str, Any]]: ...

    async def quota(self, instance_type: str) -> dict[str, Any]: ...

    async def training_plans(self) -> list[dict[str, Any]]: ...

    async def clusters(self) -> list[dict[str, Any]]: ...

    async def check_create(self, spec: ClusterSpec, region: str) -> list[Problem]: ...


class BadRequest(Exception):
    """The request itself is wrong: answered with code `invalid_request` and the fix."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _optional(request: dict[str, Any], key: str, pattern: str, example: str) -> str | None:
    value = request.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not re.match(pattern, value):
        raise BadRequest(f"{key} {value!r} is not valid", f"pass a value like {example}")
    return value


def _required(request: dict[str, Any], key: str, pattern: str, example: str) -> str:
    value = _optional(request, key, pattern, example)
    if value is None:
        raise BadRequest(f"{key} is required", f"pass a value like {example}")
    return value


Route = Callable[[dict[str, Any]], Awaitable[Any]]


class QueryResponder:
    """Answers the inspect queries with one inspector (its region is the one served), and any
    further read routes the service adds (`extra`: subject -> route)."""

    def __init__(
        self, nc: NATS, inspector: Inspecting, extra: dict[str, Route] | None = None
    ) -> None:
        self.nc = nc
        self.inspector = inspector
        self._subscriptions: list[Subscription] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._routes: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            AVAILABILITY_ZONES: self._availability_zones,
            INSTANCE_TYPES: self._instance_types,
            QUOTAS: self._quotas,
            TRAINING_PLANS: self._training_plans,
            CLUSTERS: self._clusters,
            CHECK_CREATE: self._check_create,
            **(extra or {}),
        }

    async def start(self) -> None:
        for subject in self._routes:
            self._subscriptions.append(
                await self.nc.subscribe(subject, queue=QUEUE_GROUP, cb=self._on_message)
            )
        # Answering starts once the server has the subscriptions, not when they are sent.
        await self.nc.flush()

    async def stop(self) -> None:
        """Stop taking requests, then let the ones in flight answer."""
        for subscription in self._subscriptions:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
        self._subscriptions.clear()
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)

    async def _on_message(self, msg: Msg) -> None:
        # Each request runs on its own task: a slow AWS read must not hold up the others.
        task = asyncio.create_task(self._reply(msg))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _reply(self, msg: Msg) -> None:
        body = await self.answer(msg.subject, msg.data)
        if msg.reply:
            try:
                await msg.respond(orjson.dumps(body))
            except Exception as exc:
                log.warning("query reply failed", subject=msg.subject, error=str(exc))

    async def answer(self, subject: str, data: bytes) -> dict[str, Any]:
        """The reply document for one request (the transport-free core of the responder)."""
        route = self._routes.get(subject)
        if route is None:
            return _error(
                "unknown_query", f"no query {subject}", "use one of " + ", ".join(self._routes)
            )
        try:
            request = orjson.loads(data) if data else {}
            if not isinstance(request, dict):
                raise BadRequest("the request must be a JSON object", 'send {"region": "..."}')
            return {"ok": True, "data": await route(request)}
        except orjson.JSONDecodeError as exc:
            return _error(
                "invalid_request", f"the request is not JSON: {exc}", "send a JSON object"
            )
        except BadRequest as exc:
            return _error("invalid_request", exc.message, exc.hint)
        except StageError as exc:
            hint = exc.hint or (
                "retry shortly" if isinstance(exc, TemporaryError) else _aws_hint(exc.code)
            )
            return _error(exc.code, exc.message, hint)
        except Exception as exc:
            log.exception("query failed", subject=subject)
            return _error(
                "internal_error",
                f"{type(exc).__name__}: {exc}",
                "retry; if it persists, read cluster-svc's log",
            )

    def _region(self, request: dict[str, Any]) -> None:
        region = request.get("region")
        if region not in (None, self.inspector.region):
            raise BadRequest(
                f"this control plane manages {self.inspector.region}; {region} is not served",
                f"ask about {self.inspector.region}, or run a cluster-svc configured for {region}",
            )

    async def _availability_zones(self, request: dict[str, Any]) -> Any:
        self._region(request)
        return await self.inspector.availability_zones()

    async def _instance_types(self, request: dict[str, Any]) -> Any:
        self._region(request)
        zone = _optional(request, "availability_zone_id", ZONE_ID_PATTERN, "use1-az2")
        return await self.inspector.instance_types(zone)

    async def _quotas(self, request: dict[str, Any]) -> Any:
        self._region(request)
        instance_type = _required(request, "instance_type", ML_INSTANCE_PATTERN, "ml.p5.48xlarge")
        return await self.inspector.quota(instance_type)

    async def _training_plans(self, request: dict[str, Any]) -> Any:
        self._region(request)
        return await self.inspector.training_plans()

    async def _clusters(self, request: dict[str, Any]) -> Any:
        self._region(request)
        return await self.inspector.clusters()

    async def _check_create(self, request: dict[str, Any]) -> Any:
        spec_json = request.get("spec")
        if not isinstance(spec_json, dict):
            raise BadRequest("spec is required", "send the cluster spec as a JSON object")
        try:
            spec = ClusterSpec.from_payload(spec_json)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "spec"
            hint = getattr(first.get("ctx", {}).get("error"), "hint", None)
            raise BadRequest(f"spec.{where}: {first['msg']}", hint or "fix the spec") from exc
        region = request.get("region") or self.inspector.region
        problems = await self.inspector.check_create(spec, str(region))
        return [p.to_json() for p in problems]


def _error(code: str, message: str, hint: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "hint": hint}}


def _aws_hint(code: str) -> str:
    if code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation"):
        return "grant cluster-svc's role this read (docs/operations.md: Real AWS credentials)"
    if code in ("UnrecognizedClientException", "InvalidClientTokenId", "ExpiredToken"):
        return "check cluster-svc's AWS credentials"
    return "check the request; AWS's message says what it rejected"
