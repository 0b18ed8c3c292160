"""Each service's command table, as its bootstrap declares it: every command its subjects carry
has exactly one workflow (of that command's kind), no workflow is for a command it does not
receive, and every dry run is of a command it handles."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest

import shared.contracts
from cluster_svc.bootstrap import SERVICE as CLUSTER
from inference_svc.bootstrap import SERVICE as INFERENCE
from shared.config import Settings
from shared.contracts.commands import COMMANDS
from shared.contracts.subjects import domain_commands
from shared.service import Area, Assembled, Service, ServiceRuntime, assemble
from workload_svc.bootstrap import SERVICE as WORKLOAD

for module in pkgutil.iter_modules(shared.contracts.__path__):
    importlib.import_module(f"shared.contracts.{module.name}")

SERVICES = [CLUSTER, WORKLOAD, INFERENCE]


def _assembled(service: Service) -> Assembled:
    """The service's areas, built as its process builds them (nothing is called yet)."""
    settings = Settings(aws_endpoint_url="http://127.0.0.1:9")
    none: Any = None
    return assemble(service, ServiceRuntime(settings=settings, pool=none, bus=none, engine=none))


def _carried(service: Service) -> set[str]:
    return {
        name for name, cls in COMMANDS.items() if domain_commands(cls.domain) in service.subjects
    }


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_the_command_table_is_the_commands_the_subjects_carry(service: Service) -> None:
    table = _assembled(service).workflows
    assert _carried(service), f"{service.name} receives no command"
    assert set(table) == _carried(service)
    for name, workflow in table.items():
        assert workflow.kind == COMMANDS[name].kind(), name


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_every_dry_run_is_of_a_handled_command(service: Service) -> None:
    assembled = _assembled(service)
    assert assembled.planners and set(assembled.planners) <= set(assembled.workflows)
    assert service.plan_subject in assembled.routes
    assert all(subject.startswith(f"qry.{service.domains[0]}.") for subject in assembled.routes)


def test_a_command_or_query_claimed_twice_is_refused() -> None:
    workflow = next(iter(_assembled(WORKLOAD).workflows.values()))

    def twice(runtime: ServiceRuntime) -> list[Area]:
        return [Area(workflows={"SubmitJob": workflow}), Area(workflows={"SubmitJob": workflow})]

    with pytest.raises(ValueError, match="two areas claim the command SubmitJob"):
        _assembled(Service(name="t", domains=("workload",), areas=twice))

    async def read(request: dict[str, Any]) -> Any:
        return None

    def plan_route_too(runtime: ServiceRuntime) -> list[Area]:
        return [Area(read_routes={"qry.workload.plan": read})]

    with pytest.raises(ValueError, match=r"two areas claim the query qry\.workload\.plan"):
        _assembled(Service(name="t", domains=("workload",), areas=plan_route_too))


def test_every_command_has_one_service() -> None:
    owners = [name for service in SERVICES for name in _carried(service)]
    assert sorted(owners) == sorted(COMMANDS)
