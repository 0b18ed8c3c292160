"""Contracts: the envelope, commands, events and subjects every service shares."""

from shared.contracts.commands import COMMANDS, Command
from shared.contracts.envelope import Envelope
from shared.contracts.events import EVENTS, Event

__all__ = ["COMMANDS", "EVENTS", "Command", "Envelope", "Event"]
