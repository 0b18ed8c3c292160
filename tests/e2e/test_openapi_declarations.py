"""The OpenAPI document the generated-request suite (test_fuzz_api.py) runs from: its links lead
somewhere, and its list of operations exempt from status-code conformance matches the document.
Fast: builds the document without a stack."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from gateway.app import create_app

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Operations that answer no error of their own: a liveness probe, and the endless stream (which
# the suite does not call).
NO_ERRORS = {"GET /healthz", "GET /api/v1/events/stream"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app().openapi()


def _operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{method.upper()} {path}": operation
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }


def _exempt() -> set[str]:
    config = tomllib.loads(CONFIG.read_text())
    exempt = [
        entry
        for entry in config["operations"]
        if entry.get("checks", {}).get("status_code_conformance", {}).get("enabled") is False
    ]
    assert len(exempt) == 1
    return set(exempt[0]["include-name"])


def _declares_errors(operation: dict[str, Any]) -> bool:
    return any(code[0] in "45" and code != "422" for code in operation["responses"])


def test_every_link_names_an_operation_and_its_parameters(document: dict[str, Any]) -> None:
    operations = _operations(document)
    by_id = {op["operationId"]: op for op in operations.values()}
    links = 0
    for name, operation in operations.items():
        for status, response in operation["responses"].items():
            for link_name, link in response.get("links", {}).items():
                links += 1
                target = by_id.get(link["operationId"])
                assert target is not None, f"{name} {status} {link_name}: {link['operationId']}"
                accepted = {p["name"] for p in target.get("parameters", [])}
                assert set(link["parameters"]) <= accepted, f"{name} {status} {link_name}"
    assert links > 0


def test_the_operations_exempt_from_status_code_conformance_are_those_declaring_no_errors(
    document: dict[str, Any],
) -> None:
    operations = _operations(document)
    exempt = _exempt()
    assert not exempt - operations.keys(), "exempt but not in the document"
    now_declared = sorted(name for name in exempt if _declares_errors(operations[name]))
    assert now_declared == [], f"declare their errors now: drop them from {CONFIG.name}"
    undeclared = sorted(
        name
        for name, operation in operations.items()
        if name not in exempt | NO_ERRORS and not _declares_errors(operation)
    )
    assert undeclared == [], (
        "declare the errors these answer (gateway.routes.models: READ_ERRORS, accepted(), ...)"
    )


def test_errors_are_declared_as_the_gateway_sends_them(document: dict[str, Any]) -> None:
    for name, operation in _operations(document).items():
        for status, response in operation["responses"].items():
            if status[0] in "45" and _declares_errors(operation):
                content = response.get("content", {})
                assert list(content) == ["application/json"], f"{name} {status}"
                assert content["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorBody"
                }, f"{name} {status}"
