"""A NATS cluster of three servers on loopback: routes between them and JetStream on each."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from hyperpilot.infra import NatsServer, free_port

CLUSTER_NAME = "hyperpilot"


@dataclass
class NatsCluster:
    root: Path
    size: int = 3
    nodes: list[NatsServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        """NATS_URL for the services: every node's client URL, separated by commas."""
        return ",".join(node.url for node in self.nodes)

    def start(self) -> NatsCluster:
        route_ports = [free_port() for _ in range(self.size)]
        routes = ",".join(f"nats://127.0.0.1:{p}" for p in route_ports)
        for i, route_port in enumerate(route_ports):
            node = NatsServer(
                port=free_port(),
                store_dir=self.root / f"n{i}",
                extra_args=(
                    "--server_name",
                    f"n{i}",
                    "--cluster_name",
                    CLUSTER_NAME,
                    "--cluster",
                    f"nats://127.0.0.1:{route_port}",
                    "--routes",
                    routes,
                ),
            )
            self.nodes.append(node.start())
        return self

    def wait_meta_leader(self, timeout: float = 30.0) -> None:
        """Until JetStream's meta group has elected a leader (streams can be created)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            logs = "".join(
                (node.store_dir / "nats.log").read_text(errors="replace") for node in self.nodes
            )
            if "JetStream cluster new metadata leader" in logs or "Self is new JetStream" in logs:
                return
            time.sleep(0.1)
        raise TimeoutError(f"no JetStream meta leader in {timeout}s; see {self.root}/n*/nats.log")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
