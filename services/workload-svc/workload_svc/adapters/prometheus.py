"""A Prometheus server beside the control plane (`hyperpilot up` starts Debian's package when it
is installed and names it in PROMETHEUS_URL and PROMETHEUS_HOME): its files written, its reload
asked for, its HTTP API queried (https://prometheus.io/docs/prometheus/latest/querying/api/)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import httpx
import yaml

from shared.errors import PermanentError, TemporaryError
from workload_svc.domain.prometheus import ca_file, targets_file, token_file

TIMEOUT = 20.0


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
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            answer = await http.post(f"{self.url}/-/reload")
        if answer.status_code != 200:
            raise TemporaryError(
                "PrometheusReload", f"prometheus refused the reload: {answer.text[:300]}"
            )

    async def get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        """GET an API path; its `data`. A refused query (400/422) is the caller's to fix."""
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT) as http:
                answer = await http.get(f"{self.url}{path}", params=params)
        except httpx.HTTPError as exc:
            raise TemporaryError(
                "PrometheusUnreachable", f"prometheus at {self.url}: {exc}"
            ) from exc
        try:
            body: dict[str, Any] = answer.json()
        except ValueError:
            body = {"error": answer.text[:300]}
        if answer.status_code in (400, 422):
            raise PermanentError(
                "PrometheusRefused",
                f"prometheus refused the query: {body.get('error', '')}",
                "check the query against https://prometheus.io/docs/prometheus/latest/querying/basics/",
            )
        if answer.status_code != 200 or body.get("status") != "success":
            raise TemporaryError(
                "PrometheusFailed",
                f"prometheus answered {answer.status_code}: {body.get('error', '')}",
            )
        data: dict[str, Any] = body.get("data") or {}
        return data
