"""A Prometheus server beside the control plane (`hyperpilot up` starts Debian's package when it
is installed and names it in PROMETHEUS_URL and PROMETHEUS_HOME): its files written, its reload
asked for, its HTTP API queried (https://prometheus.io/docs/prometheus/latest/querying/api/)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml

from shared.errors import PermanentError, TemporaryError
from workload_svc.domain.prometheus import ca_file, targets_file, token_file

TIMEOUT = 20.0


def _request(method: str, url: str) -> tuple[int, bytes]:
    """One HTTP call to the local server (the standard library's client: services carry no
    HTTP client library, tests/unit/test_slim.py); (status, body), an error status included."""
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, method=method), timeout=TIMEOUT
        ) as r:
            return int(r.status), bytes(r.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


def _write(path: Path, text: str | bytes) -> bool:
    """Write atomically (the server may read the file at any time); False if it was the same."""
    data = text.encode() if isinstance(text, str) else text
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_bytes(data)
    partial.replace(path)
    return True


class Prometheus:
    def __init__(self, url: str, home: Path) -> None:
        self.url = url.rstrip("/")
        self.home = home

    @classmethod
    def from_env(cls) -> Prometheus | None:
        url, home = os.environ.get("PROMETHEUS_URL"), os.environ.get("PROMETHEUS_HOME")
        return cls(url, Path(home)) if url and home else None

    def write_cluster(
        self, cluster: str, token: str, ca_data: str, groups: list[dict[str, Any]]
    ) -> None:
        """One cluster's token, CA (base64 PEM, as recorded) and target groups."""
        _write(Path(token_file(self.home, cluster)), token)
        _write(Path(ca_file(self.home, cluster)), base64.b64decode(ca_data))
        _write(Path(targets_file(self.home, cluster)), json.dumps(groups, sort_keys=True))

    def write_config(self, config: dict[str, Any]) -> bool:
        """prometheus.yml; True when it changed (then `reload`)."""
        return _write(self.home / "prometheus.yml", yaml.safe_dump(config, sort_keys=True))

    async def reload(self) -> None:
        try:
            status, body = await asyncio.to_thread(_request, "POST", f"{self.url}/-/reload")
        except (urllib.error.URLError, OSError) as exc:
            raise TemporaryError(
                "PrometheusUnreachable", f"prometheus at {self.url}: {exc}"
            ) from exc
        if status != 200:
            raise TemporaryError(
                "PrometheusReload",
                f"prometheus refused the reload: {body[:300].decode(errors='replace')}",
            )

    async def get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        """GET an API path; its `data`. A refused query (400/422) is the caller's to fix."""
        url = f"{self.url}{path}?{urlencode(params)}"
        try:
            status, raw = await asyncio.to_thread(_request, "GET", url)
        except (urllib.error.URLError, OSError) as exc:
            raise TemporaryError(
                "PrometheusUnreachable", f"prometheus at {self.url}: {exc}"
            ) from exc
        try:
            body: dict[str, Any] = json.loads(raw)
        except ValueError:
            body = {"error": raw[:300].decode(errors="replace")}
        if status in (400, 422):
            raise PermanentError(
                "PrometheusRefused",
                f"prometheus refused the query: {body.get('error', '')}",
                "check the query against https://prometheus.io/docs/prometheus/latest/querying/basics/",
            )
        if status != 200 or body.get("status") != "success":
            raise TemporaryError(
                "PrometheusFailed",
                f"prometheus answered {status}: {body.get('error', '')}",
            )
        data: dict[str, Any] = body.get("data") or {}
        return data
