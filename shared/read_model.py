"""How a service's `records.py` attaches its read-model writes to the domain's workflows.

A write is typed over its command (parsed once, here, from the stored payload): `starting`
runs in the transaction that marks the operation running, `finishing` in the one that ends it
and returns the events the ending publishes. `recorded` gives each workflow of a command table
the writes its `records.py` lists for that command type.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import asyncpg

from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.stages import FinalHook, Hook, Outcome, Workflow

C = TypeVar("C", bound=Command)

StartWrite = Callable[[asyncpg.Connection, uuid.UUID, C], Awaitable[None]]
FinishWrite = Callable[[asyncpg.Connection, uuid.UUID, C, Outcome], Awaitable[list[Event]]]


def starting(command: type[C], write: StartWrite[C]) -> Hook:
    async def hook(
        conn: asyncpg.Connection, operation_id: uuid.UUID, payload: dict[str, Any]
    ) -> None:
        await write(conn, operation_id, command.from_payload(payload))

    return hook


def finishing(command: type[C], write: FinishWrite[C]) -> FinalHook:
    async def hook(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        return await write(conn, operation_id, command.from_payload(outcome.command), outcome)

    return hook


Writes = tuple[Hook | None, FinalHook | None]  # (on_start, on_finish) of one command type


def recorded(
    workflows: Mapping[str, Workflow[Any]], writes: Mapping[str, Writes]
) -> dict[str, Workflow[Any]]:
    """The workflows, by command type, each with the read-model writes of its command type."""
    return {
        name: dataclasses.replace(workflow, on_start=writes[name][0], on_finish=writes[name][1])
        if name in writes
        else workflow
        for name, workflow in workflows.items()
    }


__all__ = ["FinishWrite", "StartWrite", "Writes", "finishing", "recorded", "starting"]
