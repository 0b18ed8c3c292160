"""One model per command. A command is imperative; its subject is `cmd.<domain>.<verb>`.

REST bodies and commands are different models: the gateway validates the REST body strictly
(unknown fields rejected), then builds the command, which consumers read leniently.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from shared.contracts.subjects import command_subject


class Command(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    domain: ClassVar[str]
    verb: ClassVar[str]

    @classmethod
    def subject(cls) -> str:
        return command_subject(cls.domain, cls.verb)

    @classmethod
    def kind(cls) -> str:
        """The operation kind this command starts, e.g. `storage.create`."""
        return f"{cls.domain}.{cls.verb}"


class CreateStorageBucket(Command):
    domain = "storage"
    verb = "create"

    name: str
    region: str


class DeleteStorageBucket(Command):
    domain = "storage"
    verb = "delete"

    name: str
    region: str


COMMANDS: dict[str, type[Command]] = {
    model.__name__: model for model in (CreateStorageBucket, DeleteStorageBucket)
}
