"""The simulated tracking server's MLflow REST API, called as the sagemaker-mlflow plugin calls
it: raw botocore SigV4 (service sagemaker-mlflow) over HTTP, the server named by its ARN header.
Unsigned or wrongly scoped requests are refused before any operation runs."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from sim.aws import SimulatedAws
from sim.testing import aws_client, wait_for
from tests.sim_aws.conftest import Network, unique

CREDENTIALS = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")


def call(
    sim: SimulatedAws,
    arn: str,
    method: str,
    operation: str,
    params: dict[str, Any],
    *,
    service: str = "sagemaker-mlflow",
    sign: bool = True,
    credentials: Credentials = CREDENTIALS,
) -> tuple[int, Any]:
    url = f"{sim.endpoint_url}/api/2.0/mlflow/{operation}"
    body = b""
    if method == "GET":
        url += "?" + urlencode(params)
    else:
        body = json.dumps(params).encode()
    headers = {
        "Content-Type": "application/json",
        "x-mlflow-sm-tracking-server-arn": arn,
        "X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest(),
    }
    request = AWSRequest(method=method, url=url, data=body or None, headers=headers)
    if sign:
        SigV4Auth(credentials, service, sim.region).add_auth(request)
    prepared = urllib.request.Request(
        url, data=body or None, method=method, headers=dict(request.headers.items())
    )
    try:
        with urllib.request.urlopen(prepared, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def server_arn(sim: SimulatedAws, network: Network) -> str:
    sm = aws_client(sim, "sagemaker")
    name = unique("mlf")
    arn = str(
        sm.create_mlflow_tracking_server(
            TrackingServerName=name,
            ArtifactStoreUri="s3://bucket/mlflow",
            RoleArn=network.role_arn,
        )["TrackingServerArn"]
    )
    wait_for(
        lambda: (
            sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"]
            == "Created"
        ),
        timeout=30,
    )
    return arn


def test_runs_and_metric_history_through_signed_requests(
    sim: SimulatedAws, server_arn: str
) -> None:
    status, created = call(sim, server_arn, "POST", "experiments/create", {"name": "llama"})
    assert status == 200
    experiment = created["experiment_id"]
    status, found = call(
        sim, server_arn, "GET", "experiments/get-by-name", {"experiment_name": "llama"}
    )
    assert found["experiment"]["experiment_id"] == experiment
    _, run = call(
        sim,
        server_arn,
        "POST",
        "runs/create",
        {"experiment_id": experiment, "run_name": "llama", "start_time": 1},
    )
    run_id = run["run"]["info"]["run_id"]
    points = [
        {"key": "loss", "value": 2.0 - s / 10, "timestamp": 1000 + s, "step": s}
        for s in range(1, 6)
    ]
    assert (
        call(sim, server_arn, "POST", "runs/log-batch", {"run_id": run_id, "metrics": points})[0]
        == 200
    )
    status, history = call(
        sim, server_arn, "GET", "metrics/get-history", {"run_id": run_id, "metric_key": "loss"}
    )
    assert status == 200
    assert [(m["step"], m["value"]) for m in history["metrics"]] == [
        (p["step"], p["value"]) for p in points
    ]
    status, page = call(
        sim,
        server_arn,
        "GET",
        "metrics/get-history",
        {"run_id": run_id, "metric_key": "loss", "max_results": 2},
    )
    assert len(page["metrics"]) == 2 and page["next_page_token"] == "2"
    status, searched = call(
        sim,
        server_arn,
        "POST",
        "runs/search",
        {"experiment_ids": [experiment], "filter": "attributes.run_name = 'llama'"},
    )
    assert [r["info"]["run_id"] for r in searched["runs"]] == [run_id]
    assert searched["runs"][0]["data"]["metrics"] == [
        {"key": "loss", "value": 1.5, "timestamp": 1005, "step": 5}
    ]
    call(sim, server_arn, "POST", "runs/update", {"run_id": run_id, "status": "FINISHED"})
    _, got = call(sim, server_arn, "GET", "runs/get", {"run_id": run_id})
    assert got["run"]["info"]["status"] == "FINISHED"
    status, missing = call(sim, server_arn, "GET", "runs/get", {"run_id": "nope"})
    assert status == 404 and missing["error_code"] == "RESOURCE_DOES_NOT_EXIST"
    status, bad = call(sim, server_arn, "POST", "runs/search", {"experiment_ids": []})
    assert status == 400 and bad["error_code"] == "INVALID_PARAMETER_VALUE"


def test_unsigned_and_misscoped_requests_are_refused(sim: SimulatedAws, server_arn: str) -> None:
    status, body = call(sim, server_arn, "POST", "experiments/create", {"name": "x"}, sign=False)
    assert status == 403 and "SigV4" in body["message"]
    status, body = call(
        sim, server_arn, "POST", "experiments/create", {"name": "x"}, service="execute-api"
    )
    assert status == 403 and "sagemaker-mlflow" in body["message"]
    other = server_arn.rsplit("/", 1)[0] + "/absent"
    status, body = call(sim, other, "POST", "experiments/create", {"name": "x"})
    assert status == 404 and body["error_code"] == "RESOURCE_DOES_NOT_EXIST"


def test_a_signature_is_recomputed_when_the_simulator_knows_the_key(
    sim: SimulatedAws, server_arn: str
) -> None:
    """The conventional static key and STS-issued credentials are checked: a wrong secret is
    refused as AWS refuses it."""
    known = Credentials("testing", "testing")
    status, _ = call(
        sim, server_arn, "POST", "experiments/create", {"name": "k"}, credentials=known
    )
    assert status == 200
    status, found = call(
        sim,
        server_arn,
        "GET",
        "experiments/get-by-name",
        {"experiment_name": "k"},
        credentials=known,
    )
    assert status == 200 and found["experiment"]["name"] == "k"
    wrong = Credentials("testing", "not-the-secret")
    status, body = call(
        sim, server_arn, "POST", "experiments/create", {"name": "w"}, credentials=wrong
    )
    assert status == 403 and "signature we calculated does not match" in body["message"]
    issued = aws_client(sim, "sts").assume_role_with_web_identity(
        RoleArn="arn:aws:iam::111111111111:role/any",
        RoleSessionName="pod",
        WebIdentityToken="header.payload.signature",
    )["Credentials"]
    pod = Credentials(issued["AccessKeyId"], issued["SecretAccessKey"], issued["SessionToken"])
    assert (
        call(sim, server_arn, "POST", "experiments/create", {"name": "p"}, credentials=pod)[0]
        == 200
    )
    forged = Credentials(issued["AccessKeyId"], "forged", issued["SessionToken"])
    assert (
        call(sim, server_arn, "POST", "experiments/create", {"name": "f"}, credentials=forged)[0]
        == 403
    )
