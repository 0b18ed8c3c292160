"""Contracts of nodes: commands and their request specs."""

from __future__ import annotations
