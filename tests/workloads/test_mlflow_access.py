"""Pods' access to a SageMaker MLflow tracking server: the names, trust and policy derived from
the job and the server's ARN, the pod spec's service account, and the mlflow_access stage
(against fakes of IAM/EKS and the cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.contracts.workloads import SubmitJob
from shared.errors import PermanentError
from tests.workloads.test_workflows import FakeCluster, run
from workload_svc.domain.mlflow_access import (
    access_policy,
    role_name,
    service_account_name,
    tracking_server,
    trust_policy,
)
from workload_svc.domain.render import render
from workload_svc.domain.workflows import submit_workflow

SERVER = "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/exp"
ISSUER = "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"


class FakeIdentity:
    def __init__(self, issuer: str | None = ISSUER) -> None:
        self.found_issuer = issuer
        self.roles: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {}

    async def issuer(self, eks_cluster: str) -> str | None:
        return self.found_issuer

    async def ensure_role(
        self, name: str, trust: dict[str, Any], policy: dict[str, Any], cluster: str
    ) -> str:
        self.roles[name] = (trust, policy, cluster)
        return f"arn:aws:iam::123456789012:role/{name}"


async def _eks(cluster: str) -> str:
    return f"eks-{cluster}"


def _command(uri: str | None, name: str = "j") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "recipe": "pytorch",
        "name": name,
        "instance_group": "gpu",
        "script": "code/train.py",
    }
    if uri is not None:
        spec["mlflow_tracking_uri"] = uri
    return SubmitJob(cluster="c", region="us-east-1", spec=spec).model_dump(mode="json")


def test_only_a_tracking_server_arn_needs_an_identity() -> None:
    found = tracking_server(SERVER)
    assert found is not None and found.name == "exp" and found.account == "123456789012"
    assert tracking_server(SERVER + "#arn:aws:iam::123456789012:role/other") == found
    assert tracking_server("https://mlflow.example.com") is None
    assert tracking_server("arn:aws:sagemaker:us-east-1:123456789012:endpoint/x") is None
    assert tracking_server(None) is None


def test_names_fit_their_limits_and_stay_distinct() -> None:
    long_a = tracking_server(SERVER.replace("/exp", "/" + "a" * 200))
    long_b = tracking_server(SERVER.replace("/exp", "/" + "a" * 199 + "b"))
    assert long_a is not None and long_b is not None
    assert len(role_name("cluster", long_a)) <= 64
    assert len(service_account_name(long_a)) <= 63
    assert role_name("cluster", long_a) != role_name("cluster", long_b)
    server = tracking_server(SERVER)
    assert server is not None
    assert role_name("c", server) == "hyperpilot-c-mlflow-exp"
    assert service_account_name(server) == "mlflow-exp"


def test_trust_is_one_service_account_and_the_policy_one_server() -> None:
    server = tracking_server(SERVER)
    assert server is not None
    trust = trust_policy(server, ISSUER, "team-a", "mlflow-exp")
    statement = trust["Statement"][0]
    assert statement["Principal"]["Federated"] == (
        "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"
    )
    assert statement["Condition"]["StringEquals"] == {
        "oidc.eks.us-east-1.amazonaws.com/id/ABC:sub": "system:serviceaccount:team-a:mlflow-exp",
        "oidc.eks.us-east-1.amazonaws.com/id/ABC:aud": "sts.amazonaws.com",
    }
    assert access_policy(server)["Statement"] == [
        {
            "Sid": "TrackingServer",
            "Effect": "Allow",
            "Action": "sagemaker-mlflow:*",
            "Resource": SERVER,
        }
    ]


def test_the_pods_run_as_the_servers_service_account() -> None:
    tracked = SubmitJob.from_payload(_command(SERVER)).spec
    pod = render(tracked).body["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert pod["serviceAccountName"] == "mlflow-exp"
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["MLFLOW_TRACKING_URI"] == SERVER and env["MLFLOW_RUN_NAME"] == "j"
    plain = SubmitJob.from_payload(_command("https://mlflow.example.com")).spec
    pod = render(plain).body["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert "serviceAccountName" not in pod


async def test_the_stage_makes_the_role_then_the_service_account() -> None:
    cluster, identity = FakeCluster(), FakeIdentity()
    workflow = submit_workflow(cluster, SubmitJob.kind(), None, identity, _eks)
    results = await run(workflow, _command(SERVER))
    assert results["mlflow_access"].outputs["mlflow"] == {
        "role_arn": "arn:aws:iam::123456789012:role/hyperpilot-c-mlflow-exp",
        "service_account": "default/mlflow-exp",
    }
    trust, policy, owner = identity.roles["hyperpilot-c-mlflow-exp"]
    assert owner == "c" and policy["Statement"][0]["Resource"] == SERVER
    assert "system:serviceaccount:default:mlflow-exp" in str(trust)
    account = cluster.objects["mlflow-exp"]
    assert account["kind"] == "ServiceAccount"
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(
        "hyperpilot-c-mlflow-exp"
    )
    assert cluster.calls.index("apply mlflow-exp") < cluster.calls.index("apply j")


async def test_other_tracking_uris_need_no_identity() -> None:
    cluster, identity = FakeCluster(), FakeIdentity()
    workflow = submit_workflow(cluster, SubmitJob.kind(), None, identity, _eks)
    results = await run(workflow, _command("https://mlflow.example.com"))
    assert results["mlflow_access"].noop and not identity.roles


async def test_a_cluster_without_an_oidc_issuer_is_refused_on_the_field() -> None:
    workflow = submit_workflow(FakeCluster(), SubmitJob.kind(), None, FakeIdentity(None), _eks)
    with pytest.raises(PermanentError) as refused:
        await run(workflow, _command(SERVER))
    assert refused.value.code == "NoOidcIssuer"
    assert refused.value.message.startswith("mlflow_tracking_uri: ")


async def test_without_iam_access_the_stage_says_what_it_needs() -> None:
    workflow = submit_workflow(FakeCluster(), SubmitJob.kind())
    with pytest.raises(PermanentError) as refused:
        await run(workflow, _command(SERVER))
    assert refused.value.code == "MlflowAccessUnavailable"
    assert "iam:CreateRole" in (refused.value.hint or "")
