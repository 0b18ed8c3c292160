"""One model per command. A command is imperative; its subject is `cmd.<domain>.<verb>`.

Commands are `Spec`s: validated strictly where they are built (unknown fields rejected) and read
leniently from the bus with `from_payload`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from shared.contracts.cluster import ClusterSpec, ImportSpec
from shared.contracts.spec import Spec
from shared.contracts.subjects import command_subject

COMMANDS: dict[str, type[Command]] = {}


class Command(Spec):
    """Every concrete command registers itself by name (how a stored command is read back)."""

    domain: ClassVar[str]
    verb: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "verb" in cls.__dict__:
            if cls.__name__ in COMMANDS:
                raise TypeError(f"two commands are named {cls.__name__}")
            COMMANDS[cls.__name__] = cls

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


class CreateCluster(Command):
    domain = "cluster"
    verb = "create"

    spec: ClusterSpec
    region: str
    bucket: str  # resolved at accept time (the spec may leave it to the default)


class DeleteCluster(Command):
    domain = "cluster"
    verb = "delete"

    name: str
    region: str
    # The create operation's stage outputs: what Hyperpilot made, so delete removes exactly that.
    resources: dict[str, dict[str, Any]] = {}


class ImportCluster(Command):
    domain = "cluster"
    verb = "import"

    spec: ImportSpec
    region: str
