"""The storage-claims area: AddStorage and RemoveStorage, their workflows and dry runs."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.areas import Area
from cluster_svc.domain.claims import (
    add_plan,
    add_storage_workflow,
    remove_plan,
    remove_storage_workflow,
)
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.records.storage import HOOKS
from shared import read_model
from shared.contracts.plan import Plan
from shared.contracts.storage import AddStorage, RemoveStorage
from shared.queries import BadRequest
from shared.stages import Workflow


def _invalid(exc: ValidationError) -> BadRequest:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "command"
    return BadRequest(f"command.{where}: {first['msg']}", "send a valid storage change")


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    del aws  # every call goes through the ports

    async def plan_add(payload: dict[str, Any]) -> Plan:
        try:
            command = AddStorage.from_payload(payload)
        except ValidationError as exc:
            raise _invalid(exc) from exc
        return await add_plan(command, ports.buckets, ports.fsx)

    async def plan_remove(payload: dict[str, Any]) -> Plan:
        try:
            command = RemoveStorage.from_payload(payload)
        except ValidationError as exc:
            raise _invalid(exc) from exc
        return remove_plan(command)

    workflows: dict[str, Workflow[Any]] = {
        AddStorage.__name__: add_storage_workflow(ports.buckets, ports.fsx, ports.kube, ports.eks),
        RemoveStorage.__name__: remove_storage_workflow(
            ports.buckets, ports.fsx, ports.kube, ports.eks
        ),
    }
    return Area(
        workflows=read_model.recorded(workflows, HOOKS),
        planners={AddStorage.__name__: plan_add, RemoveStorage.__name__: plan_remove},
    )
