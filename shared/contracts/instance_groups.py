"""Contracts of instance groups: commands and their request specs."""

from __future__ import annotations
