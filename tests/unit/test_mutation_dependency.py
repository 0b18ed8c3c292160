"""The one dependency of a mutating route (gateway.deps.mutation): what it reads from the
request, how `?dry_run` is parsed and refused, and that the API reference still lists the
parameters it reads without declaring them."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from gateway.app import create_app
from gateway.auth import Principal
from gateway.deps import AdminMutation, Mutation, OperatorMutation, _dry_run
from gateway.errors import install as install_error_handlers
from gateway.ratelimit import MutationRateLimiter
from gateway.routing import PrefixedRoute
from shared.config import Settings

SPELLINGS = ["true", "True", "1", "yes", "on", "t", "y", "false", "0", "no", "off", "F", "n"]


@pytest.mark.parametrize("value", SPELLINGS)
def test_dry_run_reads_as_a_declared_boolean_query_parameter_would(value: str) -> None:
    assert _dry_run(value) is TypeAdapter(bool).validate_python(value)


def test_dry_run_absent_is_false_and_nonsense_names_the_parameter() -> None:
    assert _dry_run(None) is False
    with pytest.raises(RequestValidationError) as raised:
        _dry_run("maybe")
    (error,) = raised.value.errors()
    assert error["loc"] == ("query", "dry_run")
    assert error["type"] == "bool_parsing"


class _Tokens:
    def __init__(self, role: str) -> None:
        self.role = role

    async def verify(self, header: str | None) -> Principal:
        return Principal("someone", self.role)


def _client(role: str) -> TestClient:
    app = FastAPI()
    install_error_handlers(app)
    app.state.pool = object()
    app.state.tokens = _Tokens(role)
    app.state.rate_limiter = MutationRateLimiter(600, 100)

    def shown(mutation: Mutation) -> dict[str, Any]:
        return {
            "pool": mutation.pool is app.state.pool,
            "principal": mutation.principal.name,
            "source": mutation.source,
            "key": mutation.idempotency_key,
            "dry_run": mutation.dry_run,
        }

    @app.post("/operate")
    async def operate(request: Request, mutation: OperatorMutation) -> dict[str, Any]:
        return shown(mutation)

    @app.post("/administer")
    async def administer(request: Request, mutation: AdminMutation) -> dict[str, Any]:
        return shown(mutation)

    return TestClient(app)


def test_one_dependency_reads_pool_caller_source_key_and_dry_run() -> None:
    client = _client("operator")
    answer = client.post(
        "/operate?dry_run=yes",
        headers={"Idempotency-Key": "k-1", "X-Hyperpilot-Source": "mcp"},
    ).json()
    assert answer == {
        "pool": True,
        "principal": "someone",
        "source": "mcp",
        "key": "k-1",
        "dry_run": True,
    }
    plain = client.post("/operate", headers={"X-Hyperpilot-Source": "elsewhere"}).json()
    assert (plain["source"], plain["key"], plain["dry_run"]) == ("rest", None, False)


def test_the_role_is_checked_and_a_bad_dry_run_is_a_422_on_its_field() -> None:
    client = _client("operator")
    assert client.post("/administer").status_code == 403
    refused = client.post("/operate?dry_run=maybe")
    assert refused.status_code == 422
    (field,) = refused.json()["error"]["fields"]
    assert field["field"] == "query.dry_run"
    assert field["rule"] == "bool_parsing"


def test_every_mutating_route_lists_what_its_dependency_reads() -> None:
    app = create_app(Settings())
    spec = app.openapi()
    documented = 0
    for route in app.routes:
        if not isinstance(route, PrefixedRoute):
            continue
        reads = any(hasattr(d.call, "openapi_parameters") for d in route.dependant.dependencies)
        for method in route.methods or ():
            operation = spec["paths"].get(route.path_format, {}).get(method.lower())
            if operation is None:
                continue
            parameters = {(p["in"], p["name"]) for p in operation.get("parameters", [])}
            both = {("query", "dry_run"), ("header", "Idempotency-Key")}
            assert (both <= parameters) == reads, (method, route.path_format)
            documented += reads
    # Every route that accepts an operation: the 34 before, plus the spaces (create, update,
    # start, stop, delete), the cluster storage claims (add, remove) and buying a training plan.
    assert documented == 42
