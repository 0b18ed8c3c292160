"""The embedded default: PostgreSQL, NATS, the simulated world and every service, as processes.

`hyperpilot up` runs it in the foreground; tests use the same class to run the real services as
real processes (so a kill -9 is a real kill -9).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from hyperpilot.infra import (
    NatsServer,
    Postgres,
    PrometheusServer,
    free_port,
    prometheus_binary,
    start_nats,
    start_postgres,
    wait_for_port,
)

# (name, python module); the order is the start order.
SERVICES: tuple[tuple[str, str], ...] = (
    ("gateway", "gateway"),
    ("cluster-svc", "cluster_svc"),
    ("workload-svc", "workload_svc"),
    ("inference-svc", "inference_svc"),
)


def _run_migrations(database_url: str) -> None:
    from shared.migrate import migrate

    asyncio.run(migrate(database_url))


@dataclass
class Stack:
    state_dir: Path
    gateway_port: int = 3099
    gateway_host: str = "127.0.0.1"
    profile: str = "fast"
    database_url: str | None = None
    nats_url: str | None = None
    aws_endpoint_url: str | None = None
    admin_token: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    services: tuple[tuple[str, str], ...] = SERVICES
    # start a Prometheus server for the metrics route when its binary is installed
    prometheus: bool = False

    postgres: Postgres | None = None
    nats: NatsServer | None = None
    sim: subprocess.Popen[bytes] | None = None
    prometheus_server: PrometheusServer | None = None
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _replica_env: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{self.gateway_host}:{self.gateway_port}"

    def start_infra(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.database_url is None:
            self.postgres = start_postgres(self.state_dir / "postgres")
            self.database_url = self.postgres.dsn()
        if self.nats_url is None:
            self.nats = start_nats(self.state_dir / "nats")
            self.nats_url = self.nats.url
        if self.aws_endpoint_url is None:
            self.aws_endpoint_url = self._start_sim()
        binary = prometheus_binary() if self.prometheus else None
        if binary is not None:
            self.prometheus_server = PrometheusServer(
                self.state_dir / "prometheus", free_port(), binary
            ).start()
        _run_migrations(self.database_url)

    @property
    def metrics_source(self) -> str:
        """What answers GET /clusters/{name}/metrics/query in this stack."""
        if self.prometheus_server is not None:
            return f"prometheus at {self.prometheus_server.url} ({self.prometheus_server.binary})"
        if self.prometheus:
            return (
                "promql-lite, scraped by workload-svc: no prometheus binary is installed"
                " (`make prometheus` installs Debian's package; then restart)"
            )
        return "promql-lite, scraped by workload-svc (this stack starts no Prometheus)"

    def _start_sim(self) -> str:
        port = free_port()
        log = open(self.state_dir / "sim.log", "ab")  # noqa: SIM115 - owned by the process
        env = {**os.environ, **self.extra_env}
        # the simulated world serves every region the control plane is told to serve
        regions = env.get("HYPERPILOT_AWS_REGIONS", "")
        self.sim = subprocess.Popen(
            [sys.executable, "-m", "sim", "--port", str(port), "--profile", self.profile]
            + (["--regions", regions] if regions.strip() else []),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        wait_for_port("127.0.0.1", port, timeout=60)
        return f"http://127.0.0.1:{port}"

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DATABASE_URL": self.database_url or "",
            "NATS_URL": self.nats_url or "",
            "AWS_ENDPOINT_URL": self.aws_endpoint_url or "",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
            "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
            "GATEWAY_HOST": self.gateway_host,
            "GATEWAY_PORT": str(self.gateway_port),
            **self.extra_env,
        }
        if self.admin_token:
            env["HYPERPILOT_ADMIN_TOKEN"] = self.admin_token
        if self.prometheus_server is not None:  # workload-svc configures it and queries it
            env["PROMETHEUS_URL"] = self.prometheus_server.url
            env["PROMETHEUS_HOME"] = str(self.prometheus_server.home)
        return env

    def start_service(self, name: str) -> subprocess.Popen[bytes]:
        module = dict(self.services)[name]
        log = open(self.state_dir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the process
        process = subprocess.Popen(
            [sys.executable, "-m", module],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env(),
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def start_replica(
        self, name: str, index: int, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """One more process of service `name`, tracked as `<name>-<index>`.

        Replicas of a domain service share its durable consumer; a gateway replica needs its
        own `GATEWAY_PORT` in `env`.
        """
        module = dict(self.services)[name]
        replica = f"{name}-{index}"
        log = open(self.state_dir / f"{replica}.log", "ab")  # noqa: SIM115 - owned by the process
        process = subprocess.Popen(
            [sys.executable, "-m", module],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**self.env(), **(env or {})},
            start_new_session=True,
        )
        self.processes[replica] = process
        self._replica_env[replica] = env or {}
        return process

    def start_services(self) -> None:
        for name, _ in self.services:
            self.start_service(name)
        self.wait_healthy()
        self._write_state()

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {process.returncode}; see {self.state_dir / (name + '.log')}"
                    )
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as response,
            ):
                if response.status == 200 and self._admin_token_works():
                    return
            time.sleep(0.05)
        raise TimeoutError(
            f"the gateway did not answer {self.url}/healthz with the admin token working"
            f" within {timeout}s"
        )

    def _admin_token_works(self) -> bool:
        """The gateway stores the admin token in the background once PostgreSQL answers: the
        stack is up when a request with it is accepted, not merely when the process answers."""
        if not self.admin_token:
            return True
        request = urllib.request.Request(
            f"{self.url}/api/v1/operations?limit=1",
            headers={"Authorization": f"Bearer {self.admin_token}"},
        )
        with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=2) as response:
            return bool(response.status == 200)
        return False

    def kill_service(self, name: str, sig: int = signal.SIGKILL) -> None:
        process = self.processes.pop(name)
        process.send_signal(sig)
        process.wait(10)

    def supervise(self) -> list[str]:
        """Restart whatever this stack started and has died: PostgreSQL, NATS, each service.

        PostgreSQL comes back on its data directory and socket, NATS on its port and JetStream
        store, so the DSN and URL the services hold stay valid; the services reconnect on their
        own. Infrastructure given from outside (DATABASE_URL, NATS_URL) is not this stack's to
        restart. The simulated world is not restarted: its state lives in its process, and a new
        one would be an empty AWS account. Returns what was restarted, as `name (how it ended)`.
        """
        restarted: list[str] = []
        if self.postgres is not None and self.postgres.pid is None:
            self.postgres.restart()
            restarted.append("postgres")
        if self.nats is not None and self.nats.pid is None:
            code = self.nats.process.returncode if self.nats.process else None
            self.nats.start()
            restarted.append(f"nats (exit {code})")
        if self.prometheus_server is not None and self.prometheus_server.pid is None:
            process = self.prometheus_server.process
            code = process.returncode if process else None
            self.prometheus_server.start()  # same port, same data and configuration
            restarted.append(f"prometheus (exit {code})")
        for name, process in list(self.processes.items()):
            if process.poll() is not None:
                restarted.append(f"{name} (exit {process.returncode})")
                self._restart_process(name)
        if restarted:
            self._write_state()
        return restarted

    def _restart_process(self, tracked: str) -> None:
        if tracked in self._replica_env:  # `<name>-<index>`, started by start_replica
            name, _, index = tracked.rpartition("-")
            self.start_replica(name, int(index), self._replica_env[tracked])
        else:
            self.start_service(tracked)

    def pids(self) -> dict[str, int | None]:
        """Every process of the stack by name: its PID, or None if it is not running."""
        pids: dict[str, int | None] = {}
        if self.postgres is not None:
            pids["postgres"] = self.postgres.pid
        if self.nats is not None:
            pids["nats"] = self.nats.pid
        if self.sim is not None:
            pids["sim"] = self.sim.pid if self.sim.poll() is None else None
        if self.prometheus_server is not None:
            pids["prometheus"] = self.prometheus_server.pid
        for name, process in self.processes.items():
            pids[name] = process.pid if process.poll() is None else None
        return pids

    def start(self) -> Stack:
        self.start_infra()
        self.start_services()
        return self

    def stop(self) -> None:
        stopping = [self.processes.pop(name) for name in reversed(list(self.processes))]
        for process in stopping:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 10
        for process in stopping:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.sim is not None and self.sim.poll() is None:
            self.sim.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.sim.wait(10)
        if self.prometheus_server is not None:
            self.prometheus_server.stop()
        if self.nats is not None:
            self.nats.stop()
        if self.postgres is not None:
            self.postgres.stop()
        with contextlib.suppress(FileNotFoundError):
            (self.state_dir / "stack.json").unlink()

    def _write_state(self) -> None:
        state = {
            "url": self.url,
            "pid": os.getpid(),
            "database_url": self.database_url,
            "nats_url": self.nats_url,
            "aws_endpoint_url": self.aws_endpoint_url,
            "services": {name: p.pid for name, p in self.processes.items()},
            # every process the stack supervises, infrastructure included (None: not running)
            "processes": self.pids(),
            "metrics": self.metrics_source,
        }
        (self.state_dir / "stack.json").write_text(json.dumps(state, indent=2))


def read_state(state_dir: Path) -> dict[str, object] | None:
    path = state_dir / "stack.json"
    if not path.exists():
        return None
    data: dict[str, object] = json.loads(path.read_text())
    return data


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def terminate(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
