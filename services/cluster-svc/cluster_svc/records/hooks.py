"""Start and finish hooks typed over their command: the engine passes the stored payload, the
hook's body reads the command."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.stages import FinalHook, Hook, Outcome

C = TypeVar("C", bound=Command)
OK = ("succeeded", "noop")


def starting(
    command: type[C], write: Callable[[asyncpg.Connection, uuid.UUID, C], Awaitable[None]]
) -> Hook:
    async def hook(
        conn: asyncpg.Connection, operation_id: uuid.UUID, payload: dict[str, Any]
    ) -> None:
        await write(conn, operation_id, command.from_payload(payload))

    return hook


def finishing(
    command: type[C],
    write: Callable[[asyncpg.Connection, C, Outcome], Awaitable[list[Event]]],
) -> FinalHook:
    async def hook(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        return await write(conn, command.from_payload(outcome.command), outcome)

    return hook
