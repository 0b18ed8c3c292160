"""Reads that need live cloud state go to the owning domain service over NATS request/reply.

The gateway never calls AWS itself; cluster-svc answers `qry.cluster.<name>` with
`{"ok": true, "data": ...}` or `{"ok": false, "error": {"code", "message", "hint"}}` (with
`"fields"` when the request broke rules on named fields).
"""

from __future__ import annotations

from typing import Any

import orjson
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from gateway.errors import ApiError
from shared.bus import Bus
from shared.contracts.subjects import query_subject


async def query(
    bus: Bus, domain: str, name: str, payload: dict[str, Any], timeout: float = 15.0
) -> Any:
    if not bus.connected or bus.nc is None:
        raise ApiError(
            503,
            "bus_unavailable",
            "NATS is unreachable, so live state cannot be read right now",
            hint="retry shortly; /readyz shows when NATS is back",
        )
    try:
        reply = await bus.nc.request(
            query_subject(domain, name), orjson.dumps(payload), timeout=timeout
        )
    except NoRespondersError as exc:
        raise ApiError(
            503,
            "service_unavailable",
            f"no {domain}-svc is running to answer {name}",
            hint=f"start {domain}-svc (`hyperpilot status` shows what runs)",
        ) from exc
    except NatsTimeout as exc:
        raise ApiError(
            504,
            "timeout",
            f"{domain}-svc did not answer {name} within {timeout:.0f}s",
            hint="retry shortly",
        ) from exc
    body = orjson.loads(reply.data)
    if not body.get("ok"):
        error = body.get("error") or {}
        # The service refused the request itself (a bad value): the caller's error, not ours.
        code = str(error.get("code", ""))
        if code in ("invalid_request", "unknown_query"):
            status = 422
        elif (
            code.startswith("NoSuch")
            or code.endswith("NotFound")
            or code.endswith("NotFoundException")
        ):
            status = 404  # the thing asked about does not exist: not a failure of ours
        else:
            status = 502
        raise ApiError(
            status,
            str(error.get("code", "upstream_error")),
            str(error.get("message", "the cloud call failed")),
            hint=error.get("hint"),
            fields=error.get("fields"),
        )
    return body.get("data")
