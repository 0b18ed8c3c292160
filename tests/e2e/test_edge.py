"""What the gateway answers at its edge besides the API itself: Retry-After on every 429 and
503, /metrics behind a token (or on its own address with METRICS_BIND), and the API reference
(/docs) served from the gateway's own files."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hyperpilot.infra import free_port
from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack, _stack, unique


@pytest.fixture
def limited_stack(
    tmp_path: Path, database_url: str, sim_aws: SimulatedAws
) -> Iterator[RunningStack]:
    """A stack whose principals may send one mutation, then one more every 10 s."""
    env = {"MUTATIONS_PER_MINUTE": "6", "MUTATION_BURST": "1"}
    with _stack(tmp_path, database_url, sim_aws, env) as running:
        yield running


def test_a_rate_limited_mutation_says_when_to_retry(limited_stack: RunningStack) -> None:
    api = limited_stack.client
    # Any mutation counts, even one that finds nothing to act on (and needs no domain service).
    retry = f"/api/v1/operations/{uuid.uuid4()}/retry"
    first = api.post(retry)
    assert first.status_code == 404, first.text
    refused = api.post(retry)
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "rate_limited"
    wait = refused.json()["error"]["retry_after_seconds"]
    assert refused.headers["Retry-After"] == str(wait)
    assert 1 <= wait <= 10  # a token comes back every 10 s


def test_nats_down_is_a_503_that_says_when_to_retry(running_stack: RunningStack) -> None:
    api = running_stack.client
    url = running_stack.stack.url
    running_stack.nats.stop()
    try:
        deadline = time.monotonic() + 30
        while (answer := api.get("/api/v1/inspect/availability-zones")).status_code != 503:
            assert time.monotonic() < deadline, answer.text  # until the gateway notices
            time.sleep(0.1)
        assert answer.json()["error"]["code"] == "bus_unavailable"
        assert 1 <= int(answer.headers["Retry-After"]) <= 5
        ready = httpx.get(f"{url}/readyz")
        assert ready.status_code == 503
        assert 1 <= int(ready.headers["Retry-After"]) <= 5
    finally:
        running_stack.nats.start()


def test_metrics_need_a_viewer_token(module_stack: RunningStack) -> None:
    api = module_stack.client
    url = module_stack.stack.url
    assert httpx.get(f"{url}/metrics").status_code == 401
    assert httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    viewer = api.post("/api/v1/tokens", {"name": unique("scraper"), "role": "viewer"})
    assert viewer.status_code == 201, viewer.text
    scraped = httpx.get(
        f"{url}/metrics", headers={"Authorization": f"Bearer {viewer.json()['token']}"}
    )
    assert scraped.status_code == 200
    assert "hyperpilot_http_request_seconds" in scraped.text


def test_metrics_bind_serves_them_on_their_own_address_instead(
    tmp_path: Path, database_url: str, sim_aws: SimulatedAws
) -> None:
    port = free_port()
    env = {"METRICS_BIND": f"127.0.0.1:{port}"}
    with _stack(tmp_path, database_url, sim_aws, env) as running:
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics")  # no token
        assert scraped.status_code == 200
        assert "hyperpilot_http_request_seconds" in scraped.text
        assert running.client.get("/metrics").status_code == 404  # not on the API's port


def test_the_api_reference_is_served_by_the_gateway_alone(module_stack: RunningStack) -> None:
    url = module_stack.stack.url
    page = httpx.get(f"{url}/docs")
    assert page.status_code == 200
    assert re.search(r"(?:https?:)?//", page.text) is None, page.text  # no URL of elsewhere
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert len(assets) == 3, assets  # the script, the style sheet, the icon
    kinds = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
    for asset in assets:
        answer = httpx.get(f"{url}{asset}")
        assert answer.status_code == 200, asset
        suffix = Path(asset.split("?")[0]).suffix
        assert answer.headers["content-type"].startswith(kinds[suffix])
        assert len(answer.content) > 1000
    assert httpx.get(f"{url}/openapi.json").status_code == 200
    assert httpx.get(f"{url}/docs/assets/..%2Fcore.py").status_code == 404
    assert httpx.get(f"{url}/redoc").status_code == 404  # ReDoc would load its logo from a CDN
