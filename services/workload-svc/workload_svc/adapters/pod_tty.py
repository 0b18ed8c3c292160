"""An interactive terminal in a pod's container through the Kubernetes API's `pods/exec`
subresource with `tty=true` and stdin (the WebSocket protocol `kubectl exec -it` speaks):
keystrokes on channel 0, output on channel 1, the terminal's size on channel 4 as client-go's
TerminalSize JSON (`{"Width", "Height"}`), the exit status on channel 3. With workload-svc's own
EKS credentials; its own ApiClient, since the stream helper swaps the client's request function
while it runs. The client is synchronous: each call blocks briefly and runs in a thread."""

from __future__ import annotations

import json
import threading
from typing import Any

from kubernetes import client as k8s
from kubernetes.stream import stream

RESIZE_CHANNEL = 4
POLL = 0.1  # seconds one read waits for output


class PodTty:
    def __init__(self, session: Any, api: k8s.ApiClient) -> None:
        self._session = session
        self._api = api
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls, kube: Any, namespace: str, pod: str, container: str | None, rows: int, cols: int
    ) -> PodTty:
        """Start `sh` with a terminal of `rows` x `cols` in the pod (a ClusterKube's client)."""
        api = k8s.ApiClient(kube.api.configuration)
        options: dict[str, Any] = {
            "command": ["sh"],
            "stderr": True,
            "stdin": True,
            "stdout": True,
            "tty": True,
            "_preload_content": False,
        }
        if container:
            options["container"] = container
        try:
            session = stream(
                k8s.CoreV1Api(api).connect_get_namespaced_pod_exec, pod, namespace, **options
            )
        except Exception:
            api.close()  # type: ignore[no-untyped-call]
            raise
        tty = cls(session, api)
        tty.resize(rows, cols)
        return tty

    def write(self, data: str) -> None:
        with self._lock:
            if self._session.is_open():
                self._session.write_stdin(data)

    def resize(self, rows: int, cols: int) -> None:
        with self._lock:
            if self._session.is_open():
                self._session.write_channel(
                    RESIZE_CHANNEL, json.dumps({"Width": cols, "Height": rows})
                )

    def read(self) -> tuple[str, bool]:
        """What the terminal showed since the last read (waiting up to POLL), and whether the
        session is still open."""
        with self._lock:
            if self._session.is_open():
                self._session.update(timeout=POLL)
            text = str(self._session.read_stdout(timeout=0) or "") + str(
                self._session.read_stderr(timeout=0) or ""
            )
            return text, bool(self._session.is_open())

    @property
    def exit_code(self) -> int | None:
        try:
            code = self._session.returncode
        except (TypeError, KeyError, IndexError, ValueError):
            return None  # the stream ended without a status (the connection dropped)
        return int(code) if code is not None else None

    def close(self) -> None:
        with self._lock:
            try:
                self._session.close()
            finally:
                self._api.close()  # type: ignore[no-untyped-call]
