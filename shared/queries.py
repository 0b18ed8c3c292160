"""Reads answered over NATS request/reply (`qry.<service>.<name>`): one responder for every
service, each adding its routes.

Reads are not commands: nothing is persisted and a lost reply is simply asked again, so they use
plain request/reply (a queue group spreads them over a service's replicas) rather than
JetStream. Every reply is `{"ok": true, "data": ...}` or
`{"ok": false, "error": {"code", "message", "hint"}}`, with `"fields"` (each broken rule's field,
rule, message and hint) when a request breaks several rules.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import ValidationError

from shared.errors import StageError, TemporaryError
from shared.logging import get_logger

log = get_logger("shared.queries")

Route = Callable[[dict[str, Any]], Awaitable[Any]]


def temporary_hint(exc: StageError) -> str:
    """The hint of a refusal that came without one."""
    return "retry shortly" if isinstance(exc, TemporaryError) else ""


class BadRequest(Exception):
    """The request itself is wrong: answered with code `invalid_request` and the fix, and
    `fields`, each broken rule (field, rule, message, hint), when it names them."""

    def __init__(self, message: str, hint: str, fields: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.fields = fields or []


def query_error(
    code: str, message: str, hint: str | None, fields: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "hint": hint}
    if fields:
        error["fields"] = fields
    return {"ok": False, "error": error}


class QueryResponder:
    """Subscribes each route's subject in the service's queue group; each request runs on its
    own task (a slow read must not hold up the others) and always gets a reply document.

    `service` is the queue group, and the log a failure's hint points to; `quiet` is for a
    service whose requests may carry a secret: neither a request's text nor an unexpected
    error's is logged or answered; `stage_hint` gives a refusal that came without a hint one."""

    def __init__(
        self,
        nc: NATS,
        routes: dict[str, Route],
        service: str,
        *,
        quiet: bool = False,
        stage_hint: Callable[[StageError], str] = temporary_hint,
    ) -> None:
        self.nc = nc
        self.routes = routes
        self.service = service
        self.quiet = quiet
        self.stage_hint = stage_hint
        self._subscriptions: list[Subscription] = []
        self._inflight: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        for subject in self.routes:
            self._subscriptions.append(
                await self.nc.subscribe(subject, queue=self.service, cb=self._on_message)
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
        """The reply document for one request (the transport-free core of the responder)."""
        route = self.routes.get(subject)
        if route is None:
            return query_error(
                "unknown_query", f"no query {subject}", "use one of " + ", ".join(self.routes)
            )
        try:
            request = orjson.loads(data) if data else {}
            if not isinstance(request, dict):
                raise BadRequest("the request must be a JSON object", "send a JSON object")
            return {"ok": True, "data": await route(request)}
        except orjson.JSONDecodeError:
            return query_error("invalid_request", "the request is not JSON", "send a JSON object")
        except BadRequest as exc:
            return query_error("invalid_request", exc.message, exc.hint, exc.fields)
        except ValidationError as exc:
            errors = exc.errors()
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
            what = str(errors[0]["msg"]).removeprefix("Value error, ") if errors else "invalid"
            rule = (errors[0].get("ctx") or {}).get("error") if errors else None
            return query_error(
                "invalid_request",
                f"{where or 'request'}: {what}",
                getattr(rule, "hint", None) or "fix the request",
            )
        except StageError as exc:
            return query_error(exc.code, exc.message, exc.hint or self.stage_hint(exc))
        except Exception as exc:
            if self.quiet:
                log.error("query failed", subject=subject, error=type(exc).__name__)
                return query_error(
                    "internal_error", f"{type(exc).__name__} answering {subject}", "retry shortly"
                )
            log.exception("query failed", subject=subject)
            return query_error(
                "internal_error",
                f"{type(exc).__name__}: {exc}",
                f"retry; if it persists, read {self.service}'s log",
            )


__all__ = ["BadRequest", "QueryResponder", "Route", "query_error", "temporary_hint"]
