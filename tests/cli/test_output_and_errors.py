"""Rendering: tables, JSON and YAML; the REST error shape as a few clear lines; exit codes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import yaml

from hyperpilot.client import ApiError, ConnectionFailed, UsageError
from hyperpilot.output import Column, Format, cell, console, details, emit, short_time, table
from hyperpilot.progress import exit_code


def _response(status: int, body: Any) -> httpx.Response:
    request = httpx.Request("POST", "http://gw/api/v1/storage/buckets")
    if isinstance(body, str):
        return httpx.Response(status, text=body, request=request)
    return httpx.Response(status, json=body, request=request)


def test_cells_are_short_and_readable() -> None:
    assert cell(None) == "-" and cell("") == "-" and cell([]) == "-" and cell({}) == "-"
    assert cell(True) == "yes" and cell(False) == "no"
    assert cell(3) == "3"
    assert cell({"a": 1, "b": [1, 2]}) == '{"a":1,"b":[1,2]}'
    assert cell(["use1-az1", "use1-az2"]) == "use1-az1, use1-az2"
    assert short_time("2026-11-29T17:20:01.123456+00:00") == "2026-11-29 17:20:01Z"
    assert short_time("not a time") == "not a time"


def test_json_and_yaml_print_exactly_the_data(capsys: pytest.CaptureFixture[str]) -> None:
    data = [{"name": "b1", "status": "available", "arn": None}]
    emit(data, Format.JSON)
    assert json.loads(capsys.readouterr().out) == data
    emit(data, Format.YAML)
    assert yaml.safe_load(capsys.readouterr().out) == data


def test_a_table_has_the_chosen_columns(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"name": "b1", "status": "available", "spec": {"zone": "use1-az2"}},
        {"name": "b2", "status": "failed", "spec": {}},
    ]
    columns = [Column("NAME", "name"), Column("STATUS", "status"), Column("ZONE", "spec.zone")]
    console().print(table(rows, columns))
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "ZONE"]
    assert out[1].split() == ["b1", "available", "use1-az2"]
    assert out[2].split() == ["b2", "failed", "-"]


def test_server_text_is_printed_as_is(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"field": "instance_groups[0].count", "message": "use [bold]16[/bold] :warning:"}]
    emit(rows, Format.TABLE)
    out = capsys.readouterr().out
    assert "instance_groups[0].count" in out
    assert "use [bold]16[/bold] :warning:" in out


def test_an_unknown_shape_still_renders(capsys: pytest.CaptureFixture[str]) -> None:
    emit([{"zone_id": "use1-az1", "zone_name": "us-east-1a"}], Format.TABLE)
    out = capsys.readouterr().out
    assert "ZONE ID" in out and "use1-az1" in out
    emit({"name": "x", "count": 2}, Format.TABLE)
    assert "count" in capsys.readouterr().out
    console().print(details({"status": "running", "error": None}))
    assert "running" in capsys.readouterr().out


def test_a_validation_error_names_each_field_rule_and_hint() -> None:
    error = ApiError.from_response(
        _response(
            422,
            {
                "error": {
                    "code": "validation_error",
                    "message": "name: bucket name is too short",
                    "fields": [
                        {
                            "field": "name",
                            "rule": "value_error",
                            "message": "bucket name is too short",
                            "hint": "use 3-63 lowercase letters, digits and hyphens",
                        }
                    ],
                }
            },
        )
    )
    assert error.exit_code == 2
    assert error.lines() == [
        "error: validation_error (HTTP 422)",
        "  name: bucket name is too short (rule value_error)",
        "    hint: use 3-63 lowercase letters, digits and hyphens",
    ]


def test_an_error_without_fields_keeps_its_message_and_hint() -> None:
    error = ApiError.from_response(
        _response(
            409,
            {"error": {"code": "not_retryable", "message": "op is running", "hint": "wait"}},
        )
    )
    assert error.lines() == ["error: not_retryable (HTTP 409): op is running", "  hint: wait"]
    assert error.method == "POST" and error.path == "/api/v1/storage/buckets"


def test_server_errors_and_odd_bodies_exit_4() -> None:
    error = ApiError.from_response(_response(502, "<html>bad gateway</html>"))
    assert error.exit_code == 4
    assert error.code == "http_error" and "bad gateway" in error.message
    assert ConnectionFailed("http://gw", "refused").exit_code == 4
    unauthorized = ApiError.from_response(
        _response(401, {"error": {"code": "unauthorized", "message": "missing token"}})
    )
    assert unauthorized.exit_code == 2
    assert any("HYPERPILOT_TOKEN" in line for line in unauthorized.lines())
    assert UsageError("bad flag", "do this").lines() == ["error: bad flag", "  hint: do this"]


@pytest.mark.parametrize(
    ("status", "code"),
    [("succeeded", 0), ("noop", 0), ("failed", 1), ("cancelled", 3), ("running", 4)],
)
def test_exit_codes_follow_the_outcome(status: str, code: int) -> None:
    assert exit_code(status) == code


def test_a_kubectl_token_without_aws_credentials_is_a_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """`clusters token` is what a kubeconfig's exec plugin runs: with no AWS credentials it
    says so and how to fix it, in two lines on stderr, and exits non-zero."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {
        k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "HYPERPILOT_TOKEN"
    }
    env |= {
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "HOME": str(tmp_path),
    }
    cli = Path(sys.executable).parent / "hyperpilot"
    done = subprocess.run(
        [str(cli), "clusters", "token", "demo", "--region", "us-east-1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert "Traceback" not in done.stderr, done.stderr
    assert "error: NoCredentials: no AWS credentials to sign an EKS token with" in done.stderr
    assert "hint: configure credentials" in done.stderr
