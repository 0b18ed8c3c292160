"""The steps (AWS calls, objects to apply or remove, waits) that make each feature's actual
state equal the request: one pure function per feature."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cluster_svc.domain.components.base import KubeObject, is_managed, object_ref, object_version
from cluster_svc.domain.features.actual import Actual, HyperPodActual
from cluster_svc.domain.features.hami import hami_steps
from cluster_svc.domain.features.objects import (
    ADDON_FAILED,
    ADDON_READY,
    ADDON_VERSIONS,
    AUTOSCALING_COMPONENT,
    CERT_MANAGER,
    CHECKPOINT_COMPONENT,
    IN_SERVICE,
    INFERENCE_COMPONENT,
    INFERENCE_REMOVED_KINDS,
    INFERENCE_VERSION,
    KARPENTER_OBJECTS,
    NODE_CLASS_LIMIT,
    ROLE_ARN_ANNOTATION,
    SPACES_ADDON,
    TRAINING_ADDON,
    Names,
    Ref,
    autoscaler_policy,
    autoscaler_trust,
    checkpoint_policy,
    checkpoint_service_account,
    checkpoint_trust,
    inference_objects,
    node_class,
    node_pool,
)
from cluster_svc.domain.identity import MANAGED_BY, POLICY_NAME, cluster_tags, same_document
from shared.contracts.features import DEFAULT_MEMORY_PERCENTAGE, FeaturesChange, NodePoolSpec
from shared.errors import PermanentError


@dataclass(frozen=True)
class Call:
    service: str  # botocore service name
    operation: str  # botocore operation name
    params: dict[str, Any]


@dataclass(frozen=True)
class Apply:
    obj: KubeObject


@dataclass(frozen=True)
class Remove:
    ref: Ref


@dataclass(frozen=True)
class Wait:
    reason: str


Step = Call | Apply | Remove | Wait


def _contains(actual: Any, wanted: Any) -> bool:
    """True when every field of `wanted` is in `actual` with the same value (defaults the API
    server adds are ignored)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(
            _contains(actual.get(k), v) for k, v in wanted.items()
        )
    return bool(actual == wanted)


def _invalid(field_name: str, message: str, hint: str) -> PermanentError:
    return PermanentError("InvalidFeatureChange", f"{field_name}: {message}", hint)


def addon_steps(names: Names, actual: Actual, addon: str, version: str | None = None) -> list[Step]:
    """Install an EKS add-on if missing and wait until it serves."""
    status = actual.addons.get(addon)
    if status in ADDON_FAILED:
        raise PermanentError(
            "AddonFailed",
            f"EKS add-on {addon} is {status}",
            f"inspect it with `aws eks describe-addon --cluster-name {names.eks_cluster}"
            f" --addon-name {addon}`, fix the cause, delete the add-on, then retry",
        )
    steps: list[Step] = []
    if status == "DELETING":
        steps.append(Wait(f"EKS add-on {addon} finishes deleting"))
    if status is None or status == "DELETING":
        steps.append(
            Call(
                "eks",
                "CreateAddon",
                {
                    "clusterName": names.eks_cluster,
                    "addonName": addon,
                    "addonVersion": version or ADDON_VERSIONS[addon],
                    "tags": dict(MANAGED_BY),
                },
            )
        )
    if status not in ADDON_READY:
        steps.append(Wait(f"EKS add-on {addon} is ACTIVE"))
    return steps


def role_steps(
    names: Names,
    actual: Actual,
    role: str,
    trust: dict[str, Any],
    policy: dict[str, Any],
    description: str,
) -> list[Step]:
    found = actual.roles.get(role)
    steps: list[Step] = []
    if found is not None and not found.ours:
        raise PermanentError(
            "RoleNameTaken",
            f"IAM role {role} exists and was not made by Hyperpilot for cluster {names.cluster}",
            f"delete or rename role {role}, then retry",
        )
    if found is None:
        steps.append(
            Call(
                "iam",
                "CreateRole",
                {
                    "RoleName": role,
                    "AssumeRolePolicyDocument": json.dumps(trust),
                    "Description": description,
                    "Tags": [
                        {"Key": k, "Value": v} for k, v in cluster_tags(names.cluster).items()
                    ],
                },
            )
        )
    elif not same_document(found.trust, trust):
        steps.append(
            Call(
                "iam",
                "UpdateAssumeRolePolicy",
                {"RoleName": role, "PolicyDocument": json.dumps(trust)},
            )
        )
    if found is None or not same_document(found.policy, policy):
        steps.append(
            Call(
                "iam",
                "PutRolePolicy",
                {"RoleName": role, "PolicyName": POLICY_NAME, "PolicyDocument": json.dumps(policy)},
            )
        )
    return steps


def remove_role_steps(actual: Actual, role: str) -> list[Step]:
    """Delete a role Hyperpilot made (inline policies first, as IAM requires); others' stay."""
    found = actual.roles.get(role)
    if found is None or not found.ours:
        return []
    steps: list[Step] = [
        Call("iam", "DeleteRolePolicy", {"RoleName": role, "PolicyName": p})
        for p in found.policy_names
    ]
    steps.append(Call("iam", "DeleteRole", {"RoleName": role}))
    return steps


def _hyperpod(names: Names, actual: Actual, feature: str) -> HyperPodActual:
    if actual.hyperpod is None:
        raise _invalid(
            f"{feature}.enabled",
            f"{feature} is a HyperPod feature and cluster {names.cluster} has no HyperPod cluster",
            "create the cluster with instance groups, or import it with hyperpod_cluster_name",
        )
    if actual.hyperpod.status in ("Failed", "Deleting"):
        raise PermanentError(
            "ClusterNotInService",
            f"HyperPod cluster {actual.hyperpod.name} is {actual.hyperpod.status}",
            "features change on an InService cluster; fix or recreate the cluster first",
        )
    return actual.hyperpod


def update_cluster_steps(hyperpod: HyperPodActual, params: dict[str, Any]) -> list[Step]:
    """UpdateCluster only on an InService cluster, then wait until it has applied the update."""
    steps: list[Step] = []
    if hyperpod.status != IN_SERVICE:
        steps.append(Wait(f"HyperPod cluster {hyperpod.name} is {IN_SERVICE}"))
    steps.append(Call("sagemaker", "UpdateCluster", {"ClusterName": hyperpod.name, **params}))
    steps.append(Wait(f"HyperPod cluster {hyperpod.name} applies the update"))
    return steps


def settle_steps(hyperpod: HyperPodActual) -> list[Step]:
    if hyperpod.status != IN_SERVICE:
        return [Wait(f"HyperPod cluster {hyperpod.name} is {IN_SERVICE}")]
    return []


def training_steps(names: Names, actual: Actual, enabled: bool) -> list[Step]:
    return cert_addon_steps(names, actual, TRAINING_ADDON, enabled)


def cert_addon_steps(names: Names, actual: Actual, addon: str, enabled: bool) -> list[Step]:
    """An EKS add-on that needs cert-manager: cert-manager first on enable; on disable the
    add-on alone goes (cert-manager may serve others)."""
    if enabled:
        return addon_steps(names, actual, CERT_MANAGER) + addon_steps(names, actual, addon)
    status = actual.addons.get(addon)
    if status is None:
        return []
    steps: list[Step] = []
    if status != "DELETING":
        steps.append(
            Call("eks", "DeleteAddon", {"clusterName": names.eks_cluster, "addonName": addon})
        )
    steps.append(Wait(f"EKS add-on {addon} is removed"))
    return steps


def inference_steps(names: Names, actual: Actual, enabled: bool) -> list[Step]:
    objects = inference_objects()
    if enabled:
        steps = addon_steps(names, actual, CERT_MANAGER)
        for wanted in objects:
            current = actual.object(object_ref(wanted))
            if current is None or (
                is_managed(current, INFERENCE_COMPONENT)
                and object_version(current) != INFERENCE_VERSION
            ):
                steps.append(Apply(wanted))
        return steps
    steps = []
    for kind in INFERENCE_REMOVED_KINDS:
        for wanted in (o for o in objects if o["kind"] == kind):
            current = actual.object(object_ref(wanted))
            if current is None:
                continue
            if not is_managed(current, INFERENCE_COMPONENT):
                raise _invalid(
                    "inference_operator",
                    f"the inference operator's {kind} {wanted['metadata']['name']} was installed"
                    " by another tool",
                    "remove it with the tool that installed it (helm uninstall, say)",
                )
            steps.append(Remove(object_ref(wanted)))
    return steps


def memory_percentage(hyperpod: HyperPodActual, requested: int | None) -> int:
    if requested is not None:
        return requested
    if hyperpod.tiered_mode == "Enable" and hyperpod.tiered_percentage:
        return hyperpod.tiered_percentage
    return DEFAULT_MEMORY_PERCENTAGE


def tiered_steps(
    names: Names, actual: Actual, enabled: bool | None, percentage: int | None
) -> list[Step]:
    hyperpod = _hyperpod(names, actual, "tiered_checkpointing")
    on = hyperpod.tiered_mode == "Enable"
    if enabled is None and not on:
        raise _invalid(
            "tiered_checkpointing.memory_percentage",
            "tiered checkpointing is disabled, so it has no memory share to change",
            "send enabled: true with memory_percentage",
        )
    want = on if enabled is None else enabled
    sa_ref = object_ref(checkpoint_service_account(names))
    if not want:
        steps: list[Step] = []
        if on:
            steps += update_cluster_steps(hyperpod, {"TieredStorageConfig": {"Mode": "Disable"}})
        current = actual.object(sa_ref)
        if current is not None and is_managed(current, CHECKPOINT_COMPONENT):
            steps.append(Remove(sa_ref))
        steps += remove_role_steps(actual, names.checkpoint_role)
        return steps
    if names.oidc_url is None:
        raise _invalid(
            "tiered_checkpointing.enabled",
            f"EKS cluster {names.eks_cluster} reports no OIDC issuer",
            "tiered checkpointing's service account assumes its role through the cluster's"
            " OIDC provider; enable the issuer on the EKS cluster, then retry",
        )
    if names.bucket is None:
        raise _invalid(
            "tiered_checkpointing.enabled",
            f"cluster {names.cluster} has no S3 bucket known to Hyperpilot",
            "checkpoints persist to the cluster's bucket; use a cluster Hyperpilot created",
        )
    if actual.oidc_provider_arn is None:
        raise _invalid(
            "tiered_checkpointing.enabled",
            f"IAM has no OIDC provider for {names.oidc_url}",
            "register the cluster's issuer with IAM (`eksctl utils associate-iam-oidc-provider`)"
            ", then retry",
        )
    steps = role_steps(
        names,
        actual,
        names.checkpoint_role,
        checkpoint_trust(names),
        checkpoint_policy(names),
        f"Managed tiered checkpointing of Hyperpilot cluster {names.cluster}",
    )
    wanted_sa = checkpoint_service_account(names)
    current = actual.object(sa_ref)
    annotations = ((current or {}).get("metadata") or {}).get("annotations") or {}
    if current is None or annotations.get(ROLE_ARN_ANNOTATION) != names.role_arn(
        names.checkpoint_role
    ):
        steps.append(Apply(wanted_sa))
    share = memory_percentage(hyperpod, percentage)
    if not on or hyperpod.tiered_percentage != share:
        steps += update_cluster_steps(
            hyperpod,
            {
                "TieredStorageConfig": {
                    "Mode": "Enable",
                    "InstanceMemoryAllocationPercentage": share,
                }
            },
        )
    else:
        steps += settle_steps(hyperpod)
    return steps


def _pool_removals(actual: Actual, keep: set[str]) -> list[Step]:
    """Remove the NodePools, then the HyperpodNodeClasses, Hyperpilot made that are not kept."""
    steps: list[Step] = []
    for found in (actual.pools, actual.classes):
        for name in sorted(set(found) - keep):
            if is_managed(found[name], AUTOSCALING_COMPONENT):
                steps.append(Remove(object_ref(found[name])))
    return steps


def pool_objects(
    hyperpod: HyperPodActual, pools: Sequence[NodePoolSpec] | None
) -> list[tuple[KubeObject, KubeObject]]:
    """The (HyperpodNodeClass, NodePool) of each pool: the declared ones, or the default pool
    over every group. A pool naming a group the cluster lacks is refused."""
    if pools is None:
        return [(node_class(sorted(hyperpod.instance_groups)), node_pool())]
    result = []
    for index, pool in enumerate(pools):
        missing = [g for g in pool.instance_groups if g not in hyperpod.instance_groups]
        if missing:
            known = ", ".join(sorted(hyperpod.instance_groups)) or "none"
            raise _invalid(
                f"autoscaling.node_pools.{index}.instance_groups",
                f"node pool {pool.name} names {', '.join(missing)}, not an instance group of"
                f" HyperPod cluster {hyperpod.name} (groups: {known})",
                "name the cluster's groups, or add the group first",
            )
        result.append((node_class(list(pool.instance_groups), pool.name), node_pool(pool)))
    return result


def autoscaling_steps(
    names: Names, actual: Actual, enabled: bool, pools: Sequence[NodePoolSpec] | None = None
) -> list[Step]:
    hyperpod = _hyperpod(names, actual, "autoscaling")
    on = hyperpod.autoscaling_mode == "Enable"
    class_ref = object_ref(node_class(()))
    pool_ref = object_ref(node_pool())
    if not enabled:
        steps: list[Step] = []
        for ref in (pool_ref, class_ref):
            current = actual.object(ref)
            if current is not None and is_managed(current, AUTOSCALING_COMPONENT):
                steps.append(Remove(ref))
        listed = [s for s in _pool_removals(actual, {KARPENTER_OBJECTS}) if s not in steps]
        steps = listed + steps
        if on:
            steps += update_cluster_steps(hyperpod, {"AutoScaling": {"Mode": "Disable"}})
        elif hyperpod.status != IN_SERVICE and actual.roles.get(names.autoscaler_role):
            steps += settle_steps(hyperpod)  # the role goes once HyperPod no longer uses it
        return steps + remove_role_steps(actual, names.autoscaler_role)
    if hyperpod.node_recovery not in (None, "Automatic"):
        raise _invalid(
            "autoscaling.enabled",
            f"managed autoscaling needs NodeRecovery Automatic; cluster {hyperpod.name} has"
            f" {hyperpod.node_recovery}",
            "recreate the cluster with node_recovery Automatic",
        )
    if not hyperpod.instance_groups:
        raise _invalid(
            "autoscaling.enabled",
            f"HyperPod cluster {hyperpod.name} has no instance groups to scale",
            "add an instance group (count 0 is fine: autoscaling scales it up from zero)",
        )
    if pools is None and len(hyperpod.instance_groups) > NODE_CLASS_LIMIT:
        raise _invalid(
            "autoscaling.enabled",
            f"a HyperpodNodeClass names at most {NODE_CLASS_LIMIT} instance groups; the cluster"
            f" has {len(hyperpod.instance_groups)}",
            "declare autoscaling.node_pools, each over at most 10 of the groups",
        )
    others_role = on and hyperpod.cluster_role not in (None, names.role_arn(names.autoscaler_role))
    steps = (
        []
        if others_role
        else role_steps(
            names,
            actual,
            names.autoscaler_role,
            autoscaler_trust(),
            autoscaler_policy(names),
            f"HyperPod managed autoscaling of Hyperpilot cluster {names.cluster}",
        )
    )
    if not on or hyperpod.autoscaler_type != "Karpenter":
        params: dict[str, Any] = {
            "AutoScaling": {"Mode": "Enable", "AutoScalerType": "Karpenter"},
            "ClusterRole": hyperpod.cluster_role
            if others_role
            else names.role_arn(names.autoscaler_role),
        }
        if hyperpod.provisioning_mode != "Continuous":
            params["NodeProvisioningMode"] = "Continuous"
        steps += update_cluster_steps(hyperpod, params)
    else:
        steps += settle_steps(hyperpod)
    if not actual.karpenter_served():
        steps.append(Wait("HyperPod serves managed Karpenter's HyperpodNodeClass and NodePool"))
    wanted = pool_objects(hyperpod, pools)
    for wanted_class, wanted_pool in wanted:
        for obj, found in (
            (wanted_class, actual.classes.get(wanted_class["metadata"]["name"])),
            (wanted_pool, actual.pools.get(wanted_pool["metadata"]["name"])),
        ):
            if obj["metadata"]["name"] == KARPENTER_OBJECTS and found is None:
                found = actual.object(object_ref(obj))
            if not _contains(found, {"spec": obj["spec"]}) or _extra_keys(found, obj):
                steps.append(Apply(obj))
    return steps + _pool_removals(actual, {c["metadata"]["name"] for c, _ in wanted})


def _extra_keys(found: KubeObject | None, wanted: KubeObject) -> bool:
    """Does the actual NodePool carry a weight or limits the wanted one dropped?"""
    have = (found or {}).get("spec") or {}
    return any(k in have and k not in wanted["spec"] for k in ("weight", "limits"))


def feature_steps(names: Names, actual: Actual, change: FeaturesChange, feature: str) -> list[Step]:
    """The steps of one feature of the change (none when it is not part of the change)."""
    if feature == "training_operator" and change.training_operator is not None:
        return training_steps(names, actual, change.training_operator)
    if feature == "spaces" and change.spaces is not None:
        return cert_addon_steps(names, actual, SPACES_ADDON, change.spaces)
    if feature in ("observability", "container_insights"):
        from cluster_svc.domain.features import observability  # it builds on these steps

        if feature == "observability" and change.observability is not None:
            return observability.observability_steps(names, actual, change.observability)
        if feature == "container_insights" and change.container_insights is not None:
            return observability.insights_steps(names, actual, change.container_insights)
        return []
    if feature == "inference_operator" and change.inference_operator is not None:
        return inference_steps(names, actual, change.inference_operator)
    if feature == "tiered_checkpointing" and change.tiered_checkpointing is not None:
        tiered = change.tiered_checkpointing
        return tiered_steps(names, actual, tiered.enabled, tiered.memory_percentage)
    if feature == "autoscaling" and change.autoscaling is not None:
        scaling = change.autoscaling
        return autoscaling_steps(names, actual, scaling.enabled, scaling.node_pools)
    if feature == "hami" and change.hami is not None:
        return hami_feature_steps(actual, change.hami)
    return []


def hami_feature_steps(actual: Actual, enabled: bool) -> list[Step]:
    """HAMi's chart objects in dependency order (features/hami.py), as steps."""
    try:
        planned = hami_steps(dict(actual.objects), enabled)
    except ValueError as exc:
        kind, name = exc.args
        raise _invalid(
            "hami",
            f"HAMi's {kind} {name} was installed by another tool",
            "remove it with the tool that installed it (helm uninstall hami -n kube-system)",
        ) from None
    steps: list[Step] = []
    for action, what in planned:
        if action == "apply":
            steps.append(Apply(what))
        elif action == "remove":
            steps.append(Remove(what))
        else:
            steps.append(Wait(what))
    return steps


def until_wait(steps: Sequence[Step]) -> tuple[list[Step], Wait | None]:
    """The steps to run now (those before the first wait) and that wait."""
    for index, step in enumerate(steps):
        if isinstance(step, Wait):
            return list(steps[:index]), step
    return list(steps), None
