"""Subject names and streams: the one place they are spelled."""

from __future__ import annotations

COMMANDS_STREAM = "COMMANDS"
EVENTS_STREAM = "EVENTS"
COMMANDS_SUBJECTS = "cmd.>"
EVENTS_SUBJECTS = "evt.>"


# AWS events that end stage waits (shared/wake.py): core NATS, no stream (a wake-up nobody is
# waiting for is worth nothing later), every replica of every service subscribed.
WAKE_SUBJECT = "wake.aws"


def command_subject(domain: str, verb: str) -> str:
    return f"cmd.{domain}.{verb}"


def event_subject(domain: str, what: str) -> str:
    return f"evt.{domain}.{what}"


def domain_commands(domain: str) -> str:
    """The filter a domain service's consumer uses: every command of its domain."""
    return f"cmd.{domain}.>"


def query_subject(domain: str, name: str) -> str:
    """Reads answered by a domain service over request/reply (not durable: a read is retried)."""
    return f"qry.{domain}.{name}"


# The service that owns each command domain answers that domain's queries.
_OWNER = {"storage": "cluster"}


def owning_service(domain: str) -> str:
    """cluster-svc owns `cluster` and `storage`; every other domain owns itself."""
    return _OWNER.get(domain, domain)
