"""Building stage contexts the way the engine does, for stages run without it."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from shared.contracts.cluster import ClusterSpec, InstanceGroupSpec
from shared.contracts.commands import CreateCluster
from shared.stages import StageContext
from tests.cluster_network.helpers import parsed

CA_DATA = base64.b64encode(
    b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
).decode()


def create_command(
    name: str = "llm", bucket: str = "hp-llm-data", region: str = "us-east-1", **spec: Any
) -> dict[str, Any]:
    command = CreateCluster(
        spec=ClusterSpec(
            name=name,
            availability_zone_id="use1-az2",
            instance_groups=[
                InstanceGroupSpec(name="workers", instance_type="ml.g5.8xlarge", count=1)
            ],
            **spec,
        ),
        region=region,
        bucket=bucket,
    )
    return command.model_dump(mode="json")


def eks_outputs(name: str = "llm", endpoint: str = "https://127.0.0.1:1") -> dict[str, Any]:
    return {"cluster_name": name, "endpoint": endpoint, "ca_data": CA_DATA}


class Contexts:
    """Contexts of one stage across run and polls: outputs persist as the engine keeps them."""

    def __init__(self, stage: str, command: dict[str, Any], outputs: dict[str, dict[str, Any]]):
        self.stage = stage
        self.command = command
        self.outputs = outputs
        self.operation_id = uuid.uuid4()
        self.external_id: str | None = None
        self.own: dict[str, Any] = {}
        self.progress: list[str] = []

    def __call__(self) -> StageContext[Any]:
        async def report(message: str) -> None:
            self.progress.append(message)

        return StageContext(
            operation_id=self.operation_id,
            stage=self.stage,
            command=self.command,
            outputs=self.outputs,
            external_id=self.external_id,
            own_outputs=dict(self.own),
            _report=report,
            _parsed=parsed(self.command),
        )

    def keep(self, result: Any) -> Any:
        """Record a Submitted/Done the way the engine persists it."""
        external = getattr(result, "external_id", None)
        if external is not None:
            self.external_id = external
        self.own.update(getattr(result, "outputs", {}) or {})
        return result
