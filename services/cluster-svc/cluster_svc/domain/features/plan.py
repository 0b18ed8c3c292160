"""The diff and the dry-run plan of a features change, and what the features panel shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster_svc.domain.components.base import KubeObject, is_managed, object_ref, object_version
from cluster_svc.domain.features.actual import (
    Actual,
    autoscaling_enabled,
    inference_enabled,
    spaces_enabled,
    tiered_enabled,
    training_enabled,
)
from cluster_svc.domain.features.hami import (
    HAMI_COMPONENT,
    HAMI_NAMESPACE,
    hami_enabled,
    hami_objects,
    scheduler_available,
)
from cluster_svc.domain.features.objects import (
    CERT_MANAGER,
    CHECKPOINT_ACCOUNT,
    CHECKPOINT_NAMESPACE,
    FEATURES,
    INFERENCE_COMPONENT,
    INFERENCE_NAMESPACE,
    ROLE_ARN_ANNOTATION,
    SPACES_ADDON,
    TRAINING_ADDON,
    Names,
    checkpoint_service_account,
    inference_objects,
    node_class,
    node_pool,
)
from cluster_svc.domain.features.observability import (
    insights_enabled,
    insights_view,
    observability_enabled,
    observability_view,
)
from cluster_svc.domain.features.steps import Apply, Call, Remove, Step, feature_steps
from shared.contracts.features import (
    AUTOSCALING_SCOPE,
    DEFAULT_MEMORY_PERCENTAGE,
    FeaturesChange,
    NodePoolSpec,
)
from shared.contracts.plan import FieldChange, Plan, PlannedCall, PlannedObject


def diff(actual: Actual, change: FeaturesChange) -> dict[str, FieldChange]:
    """Only the requested fields whose actual value differs."""
    result: dict[str, FieldChange] = {}

    def compare(key: str, now: Any, wanted: Any) -> None:
        if wanted is not None and now != wanted:
            result[key] = FieldChange(actual=now, requested=wanted)

    compare("training_operator", training_enabled(actual), change.training_operator)
    compare("inference_operator", inference_enabled(actual), change.inference_operator)
    compare("observability", observability_enabled(actual.addons), change.observability)
    compare("container_insights", insights_enabled(actual.addons), change.container_insights)
    compare("spaces", spaces_enabled(actual), change.spaces)
    compare("hami", hami_enabled(dict(actual.objects)), change.hami)
    if change.tiered_checkpointing is not None:
        on = tiered_enabled(actual)
        compare("tiered_checkpointing.enabled", on, change.tiered_checkpointing.enabled)
        hyperpod = actual.hyperpod
        share = hyperpod.tiered_percentage if hyperpod is not None and on else None
        compare(
            "tiered_checkpointing.memory_percentage",
            share,
            change.tiered_checkpointing.memory_percentage
            if change.tiered_checkpointing.memory_percentage is not None
            else (
                DEFAULT_MEMORY_PERCENTAGE
                if change.tiered_checkpointing.enabled and not on
                else None
            ),
        )
    if change.autoscaling is not None:
        compare("autoscaling.enabled", autoscaling_enabled(actual), change.autoscaling.enabled)
        if change.autoscaling.node_pools is not None:
            compare(
                "autoscaling.node_pools",
                actual_pools(actual),
                sorted(
                    (pool_view(p) for p in change.autoscaling.node_pools),
                    key=lambda p: str(p["name"]),
                ),
            )
    return result


def pool_view(pool: NodePoolSpec) -> dict[str, Any]:
    return pool.model_dump(mode="json")


def actual_pools(actual: Actual) -> list[dict[str, Any]]:
    """The NodePools Hyperpilot made, in the contract's terms (their node classes' groups)."""
    views = []
    for name in sorted(actual.pools):
        spec = actual.pools[name].get("spec") or {}
        ref = ((spec.get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        node_class_found = actual.classes.get(str(ref.get("name", name))) or {}
        disruption = spec.get("disruption") or {}
        limit = (spec.get("limits") or {}).get("nvidia.com/gpu")
        views.append(
            {
                "name": name,
                "instance_groups": list(
                    (node_class_found.get("spec") or {}).get("instanceGroups") or []
                ),
                "weight": spec.get("weight"),
                "gpu_limit": int(limit) if limit is not None else None,
                "consolidation": disruption.get("consolidationPolicy", "WhenEmpty"),
                "consolidate_after": disruption.get("consolidateAfter", "5m"),
            }
        )
    return views


def planned(steps: Sequence[Step]) -> tuple[list[PlannedCall], list[PlannedObject], list[str]]:
    calls: list[PlannedCall] = []
    objects: list[PlannedObject] = []
    notes: list[str] = []
    for step in steps:
        if isinstance(step, Call):
            calls.append(
                PlannedCall(service=step.service, operation=step.operation, params=step.params)
            )
        elif isinstance(step, Apply):
            meta = step.obj["metadata"]
            objects.append(
                PlannedObject(
                    action="apply",
                    api_version=step.obj["apiVersion"],
                    kind=step.obj["kind"],
                    name=meta["name"],
                    namespace=meta.get("namespace"),
                    body=step.obj,
                )
            )
        elif isinstance(step, Remove):
            api_version, kind, name, namespace = step.ref
            objects.append(
                PlannedObject(
                    action="delete",
                    api_version=api_version,
                    kind=kind,
                    name=name,
                    namespace=namespace,
                )
            )
        else:
            notes.append(f"waits until {step.reason}")
    return calls, objects, notes


def plan(names: Names, actual: Actual, change: FeaturesChange) -> Plan:
    """The dry run: the diff and every step each requested feature would take, in order."""
    calls: list[PlannedCall] = []
    objects: list[PlannedObject] = []
    notes: list[str] = []
    any_step = False
    for feature in FEATURES:
        steps = feature_steps(names, actual, change, feature)
        any_step = any_step or bool(steps)
        feature_calls, feature_objects, feature_notes = planned(steps)
        calls += feature_calls
        objects += feature_objects
        notes += [f"{feature}: {n}" for n in feature_notes]
    if change.autoscaling is not None:
        notes.append(f"autoscaling scope: {AUTOSCALING_SCOPE}")
    return Plan(
        command="UpdateFeatures",
        target=f"{names.cluster}/features",
        noop=not any_step,
        diff=diff(actual, change),
        calls=calls,
        objects=objects,
        notes=notes,
    )


def describe(names: Names, actual: Actual) -> dict[str, Any]:
    """The actual state of every feature, as read from AWS and the cluster."""
    hyperpod = actual.hyperpod
    sa = actual.object(object_ref(checkpoint_service_account(names)))
    annotations = ((sa or {}).get("metadata") or {}).get("annotations") or {}
    checkpoint_role = actual.roles.get(names.checkpoint_role)
    autoscaler_role = actual.roles.get(names.autoscaler_role)
    controller = next(o for o in inference_objects() if o["kind"] == "Deployment")
    inference = actual.object(object_ref(controller))
    return {
        "cluster": names.cluster,
        "training_operator": {
            "enabled": training_enabled(actual),
            "addon": TRAINING_ADDON,
            "status": actual.addons.get(TRAINING_ADDON),
            "requires": {CERT_MANAGER: actual.addons.get(CERT_MANAGER)},
        },
        "hami": hami_view(actual),
        "spaces": {
            "enabled": spaces_enabled(actual),
            "addon": SPACES_ADDON,
            "status": actual.addons.get(SPACES_ADDON),
            "requires": {CERT_MANAGER: actual.addons.get(CERT_MANAGER)},
        },
        "inference_operator": {
            "enabled": inference_enabled(actual),
            "namespace": INFERENCE_NAMESPACE,
            "version": object_version(inference),
            "installed_by_hyperpilot": inference is not None
            and is_managed(inference, INFERENCE_COMPONENT),
            "requires": {CERT_MANAGER: actual.addons.get(CERT_MANAGER)},
        },
        "observability": observability_view(names, actual),
        "container_insights": insights_view(actual),
        "tiered_checkpointing": {
            "enabled": tiered_enabled(actual),
            "memory_percentage": hyperpod.tiered_percentage
            if hyperpod is not None and tiered_enabled(actual)
            else None,
            "identity": {
                "role_name": names.checkpoint_role,
                "role_arn": checkpoint_role.arn if checkpoint_role else None,
                "oidc_provider_arn": actual.oidc_provider_arn,
                "service_account": f"{CHECKPOINT_NAMESPACE}/{CHECKPOINT_ACCOUNT}"
                if sa is not None
                else None,
                "role_arn_annotation": annotations.get(ROLE_ARN_ANNOTATION),
            },
        },
        "autoscaling": {
            "enabled": autoscaling_enabled(actual),
            "autoscaler_type": hyperpod.autoscaler_type if hyperpod else None,
            "status": hyperpod.autoscaling_status if hyperpod else None,
            "cluster_role": hyperpod.cluster_role if hyperpod else None,
            "cluster_role_made_by_hyperpilot": autoscaler_role is not None
            and hyperpod is not None
            and hyperpod.cluster_role == autoscaler_role.arn,
            "node_class": _summary(actual.object(object_ref(node_class(())))),
            "node_pool": _summary(actual.object(object_ref(node_pool()))),
            "node_pools": actual_pools(actual),
            "instance_groups": list(hyperpod.instance_groups) if hyperpod else [],
            "scope": AUTOSCALING_SCOPE,
        },
    }


def hami_view(actual: Actual) -> dict[str, Any]:
    """HAMi as the cluster has it: on when its device plugin runs, whether Hyperpilot put it
    there, its scheduler's readiness and the node label its device plugin runs on."""
    objects = dict(actual.objects)
    plugin = next(o for o in hami_objects() if o["kind"] == "DaemonSet")
    scheduler = next(o for o in hami_objects() if o["kind"] == "Deployment")
    found = objects.get(object_ref(plugin))
    return {
        "enabled": hami_enabled(objects),
        "version": object_version(found),
        "installed_by_hyperpilot": found is not None and is_managed(found, HAMI_COMPONENT),
        "scheduler_available": scheduler_available(objects.get(object_ref(scheduler))),
        "namespace": HAMI_NAMESPACE,
        "node_label": "gpu=on",
    }


def _summary(found: KubeObject | None) -> dict[str, Any] | None:
    if found is None:
        return None
    conditions = (found.get("status") or {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
    return {"name": found["metadata"]["name"], "spec": found.get("spec"), "ready": ready}
