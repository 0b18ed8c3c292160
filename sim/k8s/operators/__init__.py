"""Simulated operators: each acts only once the product has installed it (its CRD exists)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.k8s.controllers.base import Controller
    from sim.k8s.server import ApiServer


def all_operators(server: ApiServer) -> list[Controller]:
    return []
