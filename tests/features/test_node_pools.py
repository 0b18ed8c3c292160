"""Karpenter node pools as a list: each pool's HyperpodNodeClass (its instance groups) and
NodePool (weight, GPU limit, consolidation), the dry-run diff against the pools Hyperpilot made,
the pools no longer declared removed, and the rules naming the field."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from pydantic import ValidationError

from cluster_svc.domain.features.actual import Actual, RoleActual
from cluster_svc.domain.features.objects import (
    CRD_API,
    KARPENTER_CRDS,
    autoscaler_policy,
    autoscaler_trust,
)
from cluster_svc.domain.features.plan import describe, plan
from cluster_svc.domain.features.stages import advance
from cluster_svc.domain.features.steps import feature_steps
from shared.contracts.features import FeaturesChange
from shared.errors import PermanentError
from tests.features.fakes import FakePort, World, command, established_crd, names

GROUPS = ("gpu", "spot", "cpu")
POOLS = [
    {"name": "gpus", "instance_groups": ["gpu", "spot"], "weight": 50, "gpu_limit": 64},
    {
        "name": "cpus",
        "instance_groups": ["cpu"],
        "consolidation": "WhenEmptyOrUnderutilized",
        "consolidate_after": "30s",
    },
]


@dataclass
class ListingWorld(World):
    """A world whose Actual lists the managed NodePools and node classes, as the adapter does."""

    def actual(self) -> Actual:
        base = super().actual()
        managed = {
            ref: obj
            for ref, obj in self.objects.items()
            if (obj.get("metadata", {}).get("labels") or {}).get("hyperpilot.io/component")
            == "managed-autoscaling"
        }
        return replace(
            base,
            pools={r[2]: o for r, o in managed.items() if r[1] == "NodePool"},
            classes={r[2]: o for r, o in managed.items() if r[1] == "HyperpodNodeClass"},
        )


def enabled_world() -> ListingWorld:
    world = ListingWorld()
    assert world.hyperpod is not None
    role = "arn:aws:iam::111122223333:role/hyperpilot-llm-autoscaler"
    world.hyperpod = replace(
        world.hyperpod,
        instance_groups=GROUPS,
        autoscaling_mode="Enable",
        autoscaler_type="Karpenter",
        cluster_role=role,
        provisioning_mode="Continuous",
    )
    world.roles["hyperpilot-llm-autoscaler"] = RoleActual(
        role, True, autoscaler_trust(), autoscaler_policy(names()), ("hyperpilot",)
    )
    for crd in KARPENTER_CRDS:  # HyperPod serves Karpenter's kinds once autoscaling is on
        world.objects[(CRD_API, "CustomResourceDefinition", crd, None)] = established_crd(crd)
    return world


def change(**fields: object) -> FeaturesChange:
    return FeaturesChange.model_validate(fields)


async def converge(port: FakePort, changes: dict[str, object]) -> None:
    for _ in range(10):
        _actual, steps, now, wait = await advance(port, command(changes), "autoscaling")
        port.world.settle()
        if not steps or (not now and wait is None):
            return
    raise AssertionError("did not converge")


def test_pools_render_their_node_classes_and_nodepools() -> None:
    world = enabled_world()
    world.objects.update(
        {("karpenter.sagemaker.amazonaws.com/v1", "HyperpodNodeClass", "hyperpilot", None): {}}
    )
    steps = feature_steps(
        names(),
        world.actual(),
        change(autoscaling={"enabled": True, "node_pools": POOLS}),
        "autoscaling",
    )
    applied = [s.obj for s in steps if hasattr(s, "obj")]
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in applied}
    assert by_kind[("HyperpodNodeClass", "gpus")]["spec"] == {"instanceGroups": ["gpu", "spot"]}
    assert by_kind[("HyperpodNodeClass", "cpus")]["spec"] == {"instanceGroups": ["cpu"]}
    gpus = by_kind[("NodePool", "gpus")]["spec"]
    assert gpus["weight"] == 50 and gpus["limits"] == {"nvidia.com/gpu": "64"}
    assert gpus["template"]["spec"]["nodeClassRef"]["name"] == "gpus"
    assert gpus["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"}
    cpus = by_kind[("NodePool", "cpus")]["spec"]
    assert "weight" not in cpus and "limits" not in cpus
    assert cpus["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "30s",
    }


async def test_pools_converge_replace_the_default_pool_and_the_plan_is_a_diff() -> None:
    world = enabled_world()
    port = FakePort(world)
    await converge(port, {"autoscaling": {"enabled": True}})  # the default pool
    assert {r[2] for r in world.objects if r[1] == "NodePool"} == {"hyperpilot"}
    world.calls.clear()
    await converge(port, {"autoscaling": {"enabled": True, "node_pools": POOLS}})
    pools = {r[2] for r in world.objects if r[1] == "NodePool"}
    classes = {r[2] for r in world.objects if r[1] == "HyperpodNodeClass"}
    assert pools == classes == {"gpus", "cpus"}  # the default pool and its class are gone
    assert world.calls.count("delete NodePool") == 1
    assert world.calls.index("delete NodePool") < world.calls.index("delete HyperpodNodeClass")
    shown = describe(names(), world.actual())["autoscaling"]["node_pools"]
    assert [p["name"] for p in shown] == ["cpus", "gpus"]
    assert shown[1]["instance_groups"] == ["gpu", "spot"] and shown[1]["gpu_limit"] == 64

    # the same list again: nothing to do; a changed weight is one field of the diff, one apply
    same = plan(names(), world.actual(), change(autoscaling={"enabled": True, "node_pools": POOLS}))
    assert same.noop and "autoscaling.node_pools" not in same.diff
    heavier = [{**POOLS[0], "weight": 90}, POOLS[1]]
    dry = plan(
        names(), world.actual(), change(autoscaling={"enabled": True, "node_pools": heavier})
    )
    assert not dry.noop
    assert [o.name for o in dry.objects] == ["gpus"]
    before = dry.diff["autoscaling.node_pools"].actual
    after = dry.diff["autoscaling.node_pools"].requested
    assert [p["weight"] for p in before] == [None, 50] and after[1]["weight"] == 90
    # dropping a pool removes it; disabling removes every pool Hyperpilot made
    world.calls.clear()
    await converge(port, {"autoscaling": {"enabled": True, "node_pools": [POOLS[0]]}})
    assert {r[2] for r in world.objects if r[1] == "NodePool"} == {"gpus"}
    await converge(port, {"autoscaling": {"enabled": False}})
    assert not [r for r in world.objects if r[1] in ("NodePool", "HyperpodNodeClass")]


def test_pool_rules_name_the_field() -> None:
    world = enabled_world()
    with pytest.raises(PermanentError) as info:
        feature_steps(
            names(),
            world.actual(),
            change(
                autoscaling={
                    "enabled": True,
                    "node_pools": [{"name": "p", "instance_groups": ["gpu", "nope"]}],
                }
            ),
            "autoscaling",
        )
    assert "autoscaling.node_pools.0.instance_groups" in str(info.value)
    assert "nope" in str(info.value)
    with pytest.raises(ValidationError, match="only apply while autoscaling is enabled"):
        change(autoscaling={"enabled": False, "node_pools": POOLS})
    with pytest.raises(ValidationError, match="same name"):
        change(autoscaling={"enabled": True, "node_pools": [POOLS[0], POOLS[0]]})
    with pytest.raises(ValidationError, match="names an instance group twice"):
        change(
            autoscaling={
                "enabled": True,
                "node_pools": [{"name": "p", "instance_groups": ["gpu", "gpu"]}],
            }
        )
    with pytest.raises(ValidationError):
        change(autoscaling={"enabled": True, "node_pools": [{**POOLS[0], "weight": 101}]})
