"""The features route's pure helpers: where a cluster's features live, and how refusals that
need actual state become 422 (with the field) or 409."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.errors import ApiError
from gateway.records import ClusterRecord
from gateway.routes.features import REFUSAL as _rule


def target_of(row: dict[str, Any]) -> Any:
    now = datetime.now(UTC)
    return ClusterRecord.of(
        {
            "region": "us-east-1",
            "status": "active",
            "eks_cluster_arn": None,
            "hyperpod_cluster_arn": None,
            "endpoint": None,
            "ca_data": None,
            "operation_id": None,
            "created_at": now,
            "updated_at": now,
            **row,
        }
    ).feature_target()


def test_a_managed_cluster_is_addressed_by_what_its_create_recorded() -> None:
    row = {
        "name": "llm",
        "managed": True,
        "spec": {},
        "resources": {
            "eks_cluster": {"cluster_name": "llm"},
            "hyperpod_cluster": {"cluster_name": "llm"},
            "bucket": {"bucket": "hyperpilot-llm-1a2b3c4d"},
        },
    }
    target = target_of(row)
    assert (target.eks_cluster, target.hyperpod_cluster, target.bucket) == (
        "llm",
        "llm",
        "hyperpilot-llm-1a2b3c4d",
    )


def test_an_imported_cluster_is_addressed_by_its_import_spec() -> None:
    row = {
        "name": "prod",
        "managed": False,
        "resources": {},
        "spec": {"eks_cluster_name": "prod", "hyperpod_cluster_name": "prod-hp"},
    }
    target = target_of(row)
    assert (target.eks_cluster, target.hyperpod_cluster, target.bucket) == ("prod", "prod-hp", None)


def test_rule_refusals_name_the_field_and_conflicts_are_409() -> None:
    refused = _rule(
        ApiError(
            502,
            "InvalidFeatureChange",
            "tiered_checkpointing.memory_percentage: tiered checkpointing is disabled",
            hint="send enabled: true with memory_percentage",
        )
    )
    assert refused.status == 422
    [field] = refused.fields
    assert field["field"] == "tiered_checkpointing.memory_percentage"
    assert field["hint"] == "send enabled: true with memory_percentage"
    taken = _rule(ApiError(502, "RoleNameTaken", "role exists", hint="rename it"))
    assert (taken.status, taken.hint) == (409, "rename it")
    other = ApiError(504, "timeout", "slow")
    assert _rule(other) is other
