"""Amazon Managed Grafana workspaces in the simulated AWS, through unmodified boto3: created
CREATING then ACTIVE, described, listed, deleted (DELETING, then gone); a request that breaks
botocore's model is refused with ValidationException naming the member, and an unknown
workspace is ResourceNotFoundException."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.testing import aws_client, wait_for


def test_a_workspace_is_created_described_listed_and_deleted(sim: SimulatedAws) -> None:
    grafana = aws_client(sim, "grafana")
    made = grafana.create_workspace(
        accountAccessType="CURRENT_ACCOUNT",
        authenticationProviders=["AWS_SSO"],
        permissionType="SERVICE_MANAGED",
        workspaceName="hyperpilot-demo",
        workspaceDataSources=["PROMETHEUS"],
        tags={"managed-by": "hyperpilot"},
    )["workspace"]
    assert made["status"] == "CREATING" and made["endpoint"].startswith(made["id"])
    assert made["endpoint"].endswith(".grafana-workspace.us-east-1.amazonaws.com")
    wait_for(
        lambda: (
            grafana.describe_workspace(workspaceId=made["id"])["workspace"]["status"] == "ACTIVE"
        )
    )
    described = grafana.describe_workspace(workspaceId=made["id"])["workspace"]
    assert described["dataSources"] == ["PROMETHEUS"]
    assert described["authentication"] == {"providers": ["AWS_SSO"]}
    listed = grafana.list_workspaces()["workspaces"]
    assert [(w["name"], w["tags"]) for w in listed if w["id"] == made["id"]] == [
        ("hyperpilot-demo", {"managed-by": "hyperpilot"})
    ]
    assert grafana.delete_workspace(workspaceId=made["id"])["workspace"]["status"] == "DELETING"
    wait_for(lambda: all(w["id"] != made["id"] for w in grafana.list_workspaces()["workspaces"]))
    with pytest.raises(ClientError) as gone:
        grafana.describe_workspace(workspaceId=made["id"])
    assert gone.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_a_request_that_breaks_the_model_is_refused(sim: SimulatedAws) -> None:
    grafana = aws_client(sim, "grafana")
    with pytest.raises(ClientError) as refused:
        grafana.create_workspace(
            accountAccessType="EVERYONE",
            authenticationProviders=["AWS_SSO"],
            permissionType="SERVICE_MANAGED",
        )
    error = refused.value.response["Error"]
    assert error["Code"] == "ValidationException" and "'accountAccessType'" in error["Message"]
    with pytest.raises(ClientError) as bad_id:
        grafana.describe_workspace(workspaceId="not-an-id")
    assert bad_id.value.response["Error"]["Code"] == "ValidationException"
