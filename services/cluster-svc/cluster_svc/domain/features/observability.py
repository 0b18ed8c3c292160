"""Observability features (pure): the HyperPod observability add-on with the Amazon Managed
Service for Prometheus (AMP) workspace it writes to and the Amazon Managed Grafana workspace
that reads it, and Container Insights (the CloudWatch observability add-on).

- observability on: the AMP workspace (aps CreateWorkspace, alias `hyperpilot-<cluster>`), then
  the Grafana workspace (CreateWorkspace, service-managed, AWS IAM Identity Center sign-in, the
  Prometheus data source), each waited on until ACTIVE, then the EKS add-on
  `amazon-sagemaker-hyperpod-observability` (its exporters: dcgm-exporter, the EFA exporter);
  off: the add-on first, then the two workspaces, and only those tagged as Hyperpilot's for
  this cluster (a workspace someone else made is left alone).
- container insights on: the EKS add-on `amazon-cloudwatch-observability`; off: that add-on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cluster_svc.domain.features.steps import Call, Step, Wait, addon_steps
from cluster_svc.domain.identity import cluster_tags

OBSERVABILITY_ADDON = "amazon-sagemaker-hyperpod-observability"
OBSERVABILITY_VERSION = "v1.0.2-eksbuild.1"
CLOUDWATCH_ADDON = "amazon-cloudwatch-observability"
OBSERVED_ADDONS = (OBSERVABILITY_ADDON, CLOUDWATCH_ADDON)
ACTIVE = "ACTIVE"


@dataclass(frozen=True)
class WorkspaceActual:
    """An AMP or Grafana workspace found for the cluster."""

    id: str
    status: str
    endpoint: str | None
    ours: bool  # tagged as made by Hyperpilot for this cluster
    arn: str | None = None


def workspace_name(cluster: str) -> str:
    return f"hyperpilot-{cluster}"


def observability_enabled(addons: Any) -> bool:
    status = addons.get(OBSERVABILITY_ADDON)
    return status is not None and status != "DELETING"


def insights_enabled(addons: Any) -> bool:
    status = addons.get(CLOUDWATCH_ADDON)
    return status is not None and status != "DELETING"


def _workspace_steps(
    cluster: str, found: WorkspaceActual | None, service: str, params: dict[str, Any]
) -> list[Step]:
    label = "AMP" if service == "amp" else "Grafana"
    if found is None:
        return [Call(service, "CreateWorkspace", params), Wait(f"the {label} workspace is ACTIVE")]
    if found.status != ACTIVE:
        return [Wait(f"the {label} workspace {found.id} is ACTIVE (now {found.status})")]
    return []


def _remove_addon(eks_cluster: str, addons: Any, addon: str) -> list[Step]:
    status = addons.get(addon)
    if status is None:
        return []
    steps: list[Step] = []
    if status != "DELETING":
        steps.append(Call("eks", "DeleteAddon", {"clusterName": eks_cluster, "addonName": addon}))
    steps.append(Wait(f"EKS add-on {addon} is removed"))
    return steps


def observability_steps(names: Any, actual: Any, enabled: bool) -> list[Step]:
    amp: WorkspaceActual | None = actual.workspaces.get("amp")
    grafana: WorkspaceActual | None = actual.workspaces.get("grafana")
    name = workspace_name(names.cluster)
    tags = cluster_tags(names.cluster)
    if enabled:
        steps = _workspace_steps(names.cluster, amp, "amp", {"alias": name, "tags": tags})
        steps += _workspace_steps(
            names.cluster,
            grafana,
            "grafana",
            {
                "workspaceName": name,
                "workspaceDescription": f"Dashboards of Hyperpilot cluster {names.cluster}",
                "accountAccessType": "CURRENT_ACCOUNT",
                "authenticationProviders": ["AWS_SSO"],
                "permissionType": "SERVICE_MANAGED",
                "workspaceDataSources": ["PROMETHEUS"],
                "tags": tags,
            },
        )
        return steps + addon_steps(names, actual, OBSERVABILITY_ADDON, OBSERVABILITY_VERSION)
    steps = _remove_addon(names.eks_cluster, actual.addons, OBSERVABILITY_ADDON)
    for service, found in (("grafana", grafana), ("amp", amp)):
        if found is None or not found.ours:
            continue
        if found.status != "DELETING":
            steps.append(Call(service, "DeleteWorkspace", {"workspaceId": found.id}))
        label = "AMP" if service == "amp" else "Grafana"
        steps.append(Wait(f"the {label} workspace {found.id} is deleted"))
    return steps


def insights_steps(names: Any, actual: Any, enabled: bool) -> list[Step]:
    if enabled:
        return addon_steps(names, actual, CLOUDWATCH_ADDON)
    return _remove_addon(names.eks_cluster, actual.addons, CLOUDWATCH_ADDON)


def _workspace_view(found: WorkspaceActual | None, service: str) -> dict[str, Any] | None:
    if found is None:
        return None
    view: dict[str, Any] = {
        "id": found.id,
        "status": found.status,
        "made_by_hyperpilot": found.ours,
    }
    if service == "amp":
        view["arn"] = found.arn
        view["prometheus_endpoint"] = found.endpoint
        view["query_url"] = f"{found.endpoint}api/v1/query" if found.endpoint else None
    else:
        view["url"] = f"https://{found.endpoint}" if found.endpoint else None
    return view


def observability_view(names: Any, actual: Any) -> dict[str, Any]:
    return {
        "enabled": observability_enabled(actual.addons),
        "addon": OBSERVABILITY_ADDON,
        "status": actual.addons.get(OBSERVABILITY_ADDON),
        "prometheus_workspace": _workspace_view(actual.workspaces.get("amp"), "amp"),
        "grafana_workspace": _workspace_view(actual.workspaces.get("grafana"), "grafana"),
        "metrics_route": f"/api/v1/clusters/{names.cluster}/metrics/query",
    }


def insights_view(actual: Any) -> dict[str, Any]:
    return {
        "enabled": insights_enabled(actual.addons),
        "addon": CLOUDWATCH_ADDON,
        "status": actual.addons.get(CLOUDWATCH_ADDON),
    }
