"""The audit subscriber: a durable consumer on `evt.>` writing each event with its principal.

The audit log's event_id is unique, so a redelivered event is recorded once. Events are written
in batches: after a batch that did not fill, the subscriber waits `linger_seconds` so that the
events of the next ones go into one INSERT and one fetch, instead of a fetch, an INSERT and an
acknowledgement round for every event as they trickle in. An event reaches the log within about
`linger_seconds` plus one write.

What the gateway does itself without an operation is recorded the same way, as an event (event
log, outbox, `evt.>`, this subscriber): token administration (gateway.auth) and invokes of an
endpoint (`record_invoke`: who, from which face, the endpoint, its cluster, the path and the
answer's status; never the request or the answer).
"""

from __future__ import annotations

import asyncio

import asyncpg
from fastapi import Request
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import FetchTimeoutError

from gateway.deps import get_source
from shared.bus import Bus
from shared.contracts.envelope import Envelope
from shared.contracts.events import Event
from shared.contracts.subjects import EVENTS_STREAM, EVENTS_SUBJECTS
from shared.logging import get_logger
from shared.operations import append_event

log = get_logger("gateway.audit")

DURABLE = "audit"
BATCH = 256
LINGER_SECONDS = 0.25


class EndpointInvoked(Event):
    """A request sent to an endpoint's model server through the gateway, and its answer's
    status (`error`: the refusal's code when it did not reach the model server)."""

    what = "endpoint_invoked"
    cluster: str
    endpoint: str
    path: str
    status: int
    error: str | None = None


async def record_invoke(
    request: Request,
    pool: asyncpg.Pool,
    *,
    cluster: str,
    endpoint: str,
    path: str,
    status: int,
    error: str | None = None,
) -> None:
    """Record an invoke by the request's (authenticated) principal."""
    async with pool.acquire() as conn:
        await append_event(
            conn,
            operation_id=None,
            domain="inference",
            event=EndpointInvoked(
                cluster=cluster, endpoint=endpoint, path=path, status=status, error=error
            ),
            principal=request.state.principal.name,
            source=await get_source(request),
        )


class AuditSubscriber:
    def __init__(
        self, pool: asyncpg.Pool, bus: Bus, *, linger_seconds: float = LINGER_SECONDS
    ) -> None:
        self.pool = pool
        self.bus = bus
        self.linger_seconds = linger_seconds
        self.recorded = 0
        self.writes = 0  # INSERTs into the audit log (one per batch)

    async def run(self) -> None:
        while True:
            try:
                await self.bus.wait_ready()
                await self.bus.js.add_consumer(
                    EVENTS_STREAM,
                    ConsumerConfig(
                        durable_name=DURABLE,
                        ack_policy=AckPolicy.EXPLICIT,
                        deliver_policy=DeliverPolicy.ALL,
                        ack_wait=30,
                        filter_subject=EVENTS_SUBJECTS,
                        max_ack_pending=1024,
                    ),
                )
                sub = await self.bus.js.pull_subscribe_bind(durable=DURABLE, stream=EVENTS_STREAM)
                while True:
                    try:
                        messages = await sub.fetch(BATCH, timeout=1.0)
                    except (FetchTimeoutError, TimeoutError):
                        continue
                    rows = []
                    for msg in messages:
                        try:
                            env = Envelope.from_bytes(msg.data)
                        except ValueError:
                            log.error("unreadable event skipped", subject=msg.subject)
                            continue
                        rows.append(
                            (
                                env.message_id,
                                env.correlation_id if env.correlation_id.int else None,
                                env.type,
                                msg.subject,
                                env.principal,
                                env.source,
                                env.payload,
                                env.occurred_at,
                            )
                        )
                    async with self.pool.acquire() as conn:
                        await conn.executemany(
                            "INSERT INTO audit_log (event_id, operation_id, type, subject, principal,"
                            " source, payload, occurred_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                            " ON CONFLICT (event_id) DO NOTHING",
                            rows,
                        )
                    for msg in messages:
                        await msg.ack()
                    self.recorded += len(rows)
                    self.writes += 1
                    if len(messages) < BATCH:
                        await asyncio.sleep(self.linger_seconds)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("audit subscriber restarting", error=repr(exc))
                await asyncio.sleep(0.5)
