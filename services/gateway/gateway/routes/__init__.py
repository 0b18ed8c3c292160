"""REST routes under /api/v1, one module per area; every module with a `router` is served."""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import APIRouter


def routers() -> list[APIRouter]:
    found = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        router = getattr(loaded, "router", None)
        if isinstance(router, APIRouter):
            found.append(router)
    return found
