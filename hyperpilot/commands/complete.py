"""Shell completion of names the gateway knows (clusters, buckets, operations, profiles).

Completion must never fail loudly: if the gateway is unreachable, nothing is offered.
"""

from __future__ import annotations

from typing import Any

from hyperpilot import config as configuration
from hyperpilot.client import Client, CliError


def _fetch(path: str, **params: Any) -> Any:
    try:
        resolved = configuration.resolve()
        with Client(resolved.url, resolved.token, timeout=2.0, retries=1) as api:
            return api.get(path, **params)
    except (CliError, configuration.ConfigError):
        return None


def _matching(values: list[str], incomplete: str) -> list[str]:
    return [v for v in values if v.startswith(incomplete)]


def cluster_names(incomplete: str) -> list[str]:
    rows = _fetch("/api/v1/clusters", limit=1000) or []
    return _matching([str(r["name"]) for r in rows if isinstance(r, dict)], incomplete)


def bucket_names(incomplete: str) -> list[str]:
    rows = _fetch("/api/v1/storage/buckets", limit=1000) or []
    return _matching([str(r["name"]) for r in rows if isinstance(r, dict)], incomplete)


def operation_ids(incomplete: str) -> list[str]:
    answer = _fetch("/api/v1/operations", limit=50) or {}
    items = answer.get("items", []) if isinstance(answer, dict) else []
    return _matching([str(r["id"]) for r in items], incomplete)


def profile_names(incomplete: str) -> list[str]:
    try:
        names = sorted(configuration.load().profiles)
    except configuration.ConfigError:
        return []
    return _matching(names, incomplete)
