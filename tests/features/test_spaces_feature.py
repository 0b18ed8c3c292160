"""The Spaces feature: the amazon-sagemaker-spaces EKS add-on, cert-manager first, the diff
and the dry run; disabling removes the add-on alone."""

from __future__ import annotations

from cluster_svc.domain.features.objects import SPACES_ADDON
from cluster_svc.domain.features.plan import describe, plan
from cluster_svc.domain.features.steps import Call, feature_steps
from shared.contracts.features import FeaturesChange
from tests.features.fakes import FakePort, World, names
from tests.features.test_domain import converge, ops


def test_spaces_install_cert_manager_first_then_the_add_on() -> None:
    steps = feature_steps(names(), World().actual(), FeaturesChange(spaces=True), "spaces")
    assert ops(steps) == ["CreateAddon", "wait", "CreateAddon", "wait"]
    assert [s.params["addonName"] for s in steps if isinstance(s, Call)] == [
        "cert-manager",
        SPACES_ADDON,
    ]
    created = [s for s in steps if isinstance(s, Call)][1]
    assert created.params["addonVersion"] == "v0.1.6-eksbuild.1"


def test_the_dry_run_shows_the_diff_and_describe_reads_the_add_on() -> None:
    world = World(addons={"cert-manager": "ACTIVE"})
    dry = plan(names(), world.actual(), FeaturesChange(spaces=True))
    assert dry.diff["spaces"].actual is False and dry.diff["spaces"].requested is True
    assert [c.params["addonName"] for c in dry.calls] == [SPACES_ADDON]
    assert describe(names(), world.actual())["spaces"]["enabled"] is False


async def test_spaces_round_trip_keeps_cert_manager() -> None:
    world = World()
    port = FakePort(world)
    await converge(port, {"spaces": True}, "spaces")
    assert world.addons == {"cert-manager": "ACTIVE", SPACES_ADDON: "ACTIVE"}
    assert describe(names(), world.actual())["spaces"]["status"] == "ACTIVE"
    await converge(port, {"spaces": False}, "spaces")
    assert world.addons == {"cert-manager": "ACTIVE"}
