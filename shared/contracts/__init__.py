"""Contracts: the envelope, commands, events and subjects every service shares.

Importing the package imports every contract module, so each command and event is registered
by name (COMMANDS, EVENTS) before any is read back from storage or the bus.
"""

from shared.contracts import (  # noqa: F401
    cluster,
    dependencies,
    features,
    governance,
    inference,
    instance_groups,
    nodes,
    plan,
    workloads,
)
from shared.contracts.commands import COMMANDS, Command
from shared.contracts.envelope import Envelope
from shared.contracts.events import EVENTS, Event

__all__ = ["COMMANDS", "EVENTS", "Command", "Envelope", "Event"]
