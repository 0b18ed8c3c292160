"""Drift of a managed feature: tiered checkpointing turned on through REST, its IAM role deleted
directly in the simulated IAM (boto3), is a DriftDetected `features.tiered_checkpointing.role`
on refresh; restore turns the feature on again as an operation (dry run first) and the role is
back; deleted again and accepted, the record says the feature is off and nothing differs."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_svc.domain.identity import role_name
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import Client, RunningStack, cluster_spec, unique

# A built cluster and a HyperPod update: in `make reliability`.
pytestmark = pytest.mark.slow

FIELD = "features.tiered_checkpointing.role"


def _delete_role(sim_aws: SimulatedAws, name: str) -> None:
    iam = aws_client(sim_aws, "iam")
    for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        iam.detach_role_policy(RoleName=name, PolicyArn=attached["PolicyArn"])
    iam.delete_role(RoleName=name)


def _drift(api: Client, cluster: str) -> dict[str, Any]:
    answer = api.post(f"/api/v1/clusters/{cluster}/refresh")
    assert answer.status_code == 200, answer.text
    return {d["field"]: d for d in answer.json()["differences"]}


def test_a_feature_role_deleted_is_drift_restored_then_accepted(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    cluster = unique("fdrift")
    op = api.post("/api/v1/clusters", cluster_spec(api, cluster, count=1)).json()["operation_id"]
    assert api.wait(op, timeout=240)["status"] == "succeeded"
    features = f"/api/v1/clusters/{cluster}/features"
    on = api.http.patch(features, json={"tiered_checkpointing": {"enabled": True}})
    assert on.status_code == 202, on.text
    assert api.wait(on.json()["operation_id"], timeout=180)["status"] == "succeeded"
    assert FIELD not in _drift(api, cluster)

    role = role_name(cluster, "ckpt")
    _delete_role(sim_aws, role)
    found = _drift(api, cluster)[FIELD]
    assert (found["recorded"], found["actual"]) == ("present", "absent")

    restore = f"/api/v1/clusters/{cluster}/drift/restore"
    dry = api.post(restore, {"field": FIELD}, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    restored = api.post(restore, {"field": FIELD})
    assert restored.status_code == 202, restored.text
    assert api.wait(restored.json()["operation_id"], timeout=180)["status"] == "succeeded"
    aws_client(sim_aws, "iam").get_role(RoleName=role)
    assert FIELD not in _drift(api, cluster)

    _delete_role(sim_aws, role)
    assert FIELD in _drift(api, cluster)
    accepted = api.post(f"/api/v1/clusters/{cluster}/drift/accept", {"fields": [FIELD]})
    assert accepted.status_code == 200, accepted.text
    assert FIELD not in _drift(api, cluster)
    done = api.wait(api.delete(f"/api/v1/clusters/{cluster}").json()["operation_id"], timeout=240)
    assert done["status"] == "succeeded", done
