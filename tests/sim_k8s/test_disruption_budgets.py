"""PodDisruptionBudgets are refused as the real API server refuses them: minAvailable and
maxUnavailable both set, a negative count or a percentage over 100% (upstream's
ValidatePodDisruptionBudgetSpec), by kubectl 1.37 and the Python client, unmodified; a valid
budget and a patch that keeps one of the two go through."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

BOTH = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: both, namespace: default}
spec:
  minAvailable: 2
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
"""


@pytest.fixture(scope="module")
def policy(api_client: client.ApiClient) -> client.PolicyV1Api:
    return client.PolicyV1Api(api_client)


def _budget(name: str, **spec: Any) -> Any:
    """The manifest as a dict (the client sends a dict body as it is)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
    }


def _spec(budget: client.V1PodDisruptionBudget) -> client.V1PodDisruptionBudgetSpec:
    assert budget.spec is not None
    return budget.spec


def _causes(exc: ApiException) -> list[dict[str, str]]:
    status = json.loads(exc.body or "{}")
    assert status["reason"] == "Invalid" and status["code"] == 422
    causes: list[dict[str, str]] = status["details"]["causes"]
    return causes


def test_kubectl_apply_with_both_budgets_is_refused_and_nothing_is_stored(
    kubectl: Kubectl,
) -> None:
    result = kubectl("apply", "-f", "-", stdin=BOTH, check=False)
    assert result.returncode != 0
    # kubectl's own wording of a 422, as against a real cluster
    assert result.stderr.startswith(
        'The PodDisruptionBudget "both" is invalid: spec: Invalid value'
    )
    assert "minAvailable and maxUnavailable cannot be both set" in result.stderr
    missing = kubectl("get", "pdb", "both", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_the_client_gets_422_naming_spec_and_a_single_budget_is_accepted(
    policy: client.PolicyV1Api,
) -> None:
    with pytest.raises(ApiException) as err:
        policy.create_namespaced_pod_disruption_budget(
            "default", _budget("both-client", minAvailable="50%", maxUnavailable=1)
        )
    assert err.value.status == 422
    [cause] = _causes(err.value)
    assert cause["field"] == "spec" and cause["reason"] == "FieldValueInvalid"
    assert cause["message"].endswith("minAvailable and maxUnavailable cannot be both set")

    made = policy.create_namespaced_pod_disruption_budget(
        "default", _budget("one", minAvailable="50%")
    )
    assert _spec(made).min_available == "50%" and _spec(made).max_unavailable is None

    # a patch that adds the other budget is refused the same way; the stored one is unchanged
    with pytest.raises(ApiException) as err:
        policy.patch_namespaced_pod_disruption_budget(
            "one", "default", {"spec": {"maxUnavailable": 1}}
        )
    assert [c["field"] for c in _causes(err.value)] == ["spec"]
    kept = policy.read_namespaced_pod_disruption_budget("one", "default")
    assert _spec(kept).min_available == "50%" and _spec(kept).max_unavailable is None

    # switching from one to the other (the first removed by the same patch) is allowed
    switched = policy.patch_namespaced_pod_disruption_budget(
        "one", "default", {"spec": {"minAvailable": None, "maxUnavailable": 1}}
    )
    assert _spec(switched).min_available is None and _spec(switched).max_unavailable == 1


@pytest.mark.parametrize(
    ("spec", "field", "detail"),
    [
        (
            {"minAvailable": -1},
            "spec.minAvailable",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        ({"maxUnavailable": "150%"}, "spec.maxUnavailable", "must not be greater than 100%"),
        (
            {"maxUnavailable": "half"},
            "spec.maxUnavailable",
            "must be an integer or percentage (e.g '5%')",
        ),
    ],
)
def test_a_budget_that_is_not_a_count_or_percentage_is_refused(
    policy: client.PolicyV1Api, spec: dict[str, Any], field: str, detail: str
) -> None:
    with pytest.raises(ApiException) as err:
        policy.create_namespaced_pod_disruption_budget("default", _budget("bad-value", **spec))
    [cause] = _causes(err.value)
    assert cause["field"] == field and detail in cause["message"]
