"""Every Kubernetes request has a timeout: an API server that accepts the connection and never
answers fails the call as temporary (it is retried) instead of holding a thread for ever, and a
request naming its own timeout keeps it."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from shared.adapters.eks_kube import ClusterKube, TimedApiClient, request_timeout
from shared.config import get_settings
from shared.errors import TemporaryError


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An HTTP endpoint that accepts connections and reads requests but never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    listener.close()


def test_a_silent_api_server_fails_the_call_as_temporary(
    silent_server: str, tmp_path: Path
) -> None:
    kube = ClusterKube(TimedApiClient(k8s.Configuration(host=silent_server), (1.0, 0.5)))
    started = time.monotonic()
    with pytest.raises(TemporaryError) as caught:
        asyncio.run(kube.nodes())
    assert time.monotonic() - started < 10  # the client retries a read of GET a few times
    assert caught.value.code == "KubernetesApiTimeout"
    assert caught.value.message.startswith("list nodes: the cluster's API server did not answer")
    assert "KUBE_REQUEST_TIMEOUT_SECONDS" in (caught.value.hint or "")


def test_a_request_naming_its_own_timeout_keeps_it(silent_server: str) -> None:
    api = TimedApiClient(k8s.Configuration(host=silent_server), (1.0, 30.0))
    started = time.monotonic()
    with pytest.raises(Exception, match=r"(?i)read timed out"):
        k8s.CoreV1Api(api).list_node(_request_timeout=(1.0, 0.3))
    assert time.monotonic() - started < 10


def test_the_default_timeout_comes_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_CONNECT_TIMEOUT_SECONDS", "3")
    monkeypatch.setenv("KUBE_REQUEST_TIMEOUT_SECONDS", "7")
    get_settings.cache_clear()
    try:
        assert request_timeout() == (3.0, 7.0)
    finally:
        get_settings.cache_clear()
