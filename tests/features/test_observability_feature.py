"""The observability features: the AMP workspace, then the Grafana workspace, then the HyperPod
observability add-on (each waited on), off in the reverse order and only what Hyperpilot made;
Container Insights as the CloudWatch add-on. The dry run, the diff and describe."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cluster_svc.domain.features.actual import Actual
from cluster_svc.domain.features.observability import (
    CLOUDWATCH_ADDON,
    OBSERVABILITY_ADDON,
    WorkspaceActual,
)
from cluster_svc.domain.features.plan import describe, plan
from cluster_svc.domain.features.steps import Apply, Call, Remove, feature_steps
from shared.contracts.features import FeaturesChange
from tests.features.fakes import FakePort, World, names
from tests.features.test_domain import converge, ops


@dataclass
class ObservedWorld(World):
    """The features world plus AMP and Grafana workspaces (created CREATING, settled ACTIVE)."""

    workspaces: dict[str, WorkspaceActual | None] = field(default_factory=dict)

    def actual(self) -> Actual:
        return replace(super().actual(), workspaces=dict(self.workspaces))

    def settle(self) -> None:
        super().settle()
        for key, found in list(self.workspaces.items()):
            if found is not None and found.status == "CREATING":
                self.workspaces[key] = replace(found, status="ACTIVE")
            elif found is not None and found.status == "DELETING":
                self.workspaces[key] = None

    def execute(self, step: Call | Apply | Remove) -> None:
        if isinstance(step, Call) and step.service in ("amp", "grafana"):
            self.calls.append(f"{step.service}:{step.operation}")
            if step.operation == "CreateWorkspace":
                endpoint = "https://aps.example/ws-1/" if step.service == "amp" else "g-1.example"
                ours = step.params["tags"]["managed-by"] == "hyperpilot"
                self.workspaces[step.service] = WorkspaceActual(
                    f"{step.service}-1", "CREATING", endpoint, ours, "arn:ws"
                )
            else:
                found = self.workspaces[step.service]
                assert found is not None and found.id == step.params["workspaceId"]
                self.workspaces[step.service] = replace(found, status="DELETING")
            return
        super().execute(step)


def test_enable_makes_the_workspaces_first_then_the_add_on() -> None:
    steps = feature_steps(
        names(), ObservedWorld().actual(), FeaturesChange(observability=True), "observability"
    )
    assert ops(steps) == [
        "CreateWorkspace",
        "wait",
        "CreateWorkspace",
        "wait",
        "CreateAddon",
        "wait",
    ]
    amp, grafana, addon = [s for s in steps if isinstance(s, Call)]
    assert (amp.service, amp.params["alias"]) == ("amp", "hyperpilot-llm")
    assert grafana.service == "grafana" and grafana.params["workspaceDataSources"] == ["PROMETHEUS"]
    assert grafana.params["tags"]["hyperpilot:cluster"] == "llm"
    assert (addon.params["addonName"], addon.params["addonVersion"]) == (
        OBSERVABILITY_ADDON,
        "v1.0.2-eksbuild.1",
    )


def test_dry_run_and_describe_link_the_workspaces() -> None:
    world = ObservedWorld(addons={CLOUDWATCH_ADDON: "ACTIVE"})
    dry = plan(names(), world.actual(), FeaturesChange(observability=True, container_insights=True))
    assert dry.diff["observability"].actual is False and dry.diff["observability"].requested
    assert "container_insights" not in dry.diff  # already on
    assert [c.operation for c in dry.calls] == ["CreateWorkspace", "CreateWorkspace", "CreateAddon"]
    world.workspaces["amp"] = WorkspaceActual("ws-1", "ACTIVE", "https://aps/ws-1/", True, "arn")
    world.workspaces["grafana"] = WorkspaceActual("g-1", "ACTIVE", "g-1.grafana", True)
    view = describe(names(), world.actual())
    assert view["observability"]["prometheus_workspace"]["query_url"] == (
        "https://aps/ws-1/api/v1/query"
    )
    assert view["observability"]["grafana_workspace"]["url"] == "https://g-1.grafana"
    assert view["container_insights"] == {
        "enabled": True,
        "addon": CLOUDWATCH_ADDON,
        "status": "ACTIVE",
    }


async def test_round_trip_removes_the_add_on_then_only_our_workspaces() -> None:
    world = ObservedWorld()
    port = FakePort(world)
    await converge(port, {"observability": True}, "observability")
    assert world.addons == {"cert-manager": "ACTIVE", OBSERVABILITY_ADDON: "ACTIVE"} or (
        world.addons == {OBSERVABILITY_ADDON: "ACTIVE"}
    )
    assert world.calls == ["amp:CreateWorkspace", "grafana:CreateWorkspace", "CreateAddon"]
    world.calls.clear()
    await converge(port, {"observability": False}, "observability")
    assert world.calls == ["DeleteAddon", "grafana:DeleteWorkspace", "amp:DeleteWorkspace"]
    assert OBSERVABILITY_ADDON not in world.addons
    assert world.workspaces == {"amp": None, "grafana": None}
    # a workspace someone else made under the name stays
    world.workspaces["amp"] = WorkspaceActual("theirs", "ACTIVE", None, False)
    assert (
        ops(
            feature_steps(
                names(), world.actual(), FeaturesChange(observability=False), "observability"
            )
        )
        == []
    )


async def test_container_insights_toggles_the_cloudwatch_add_on() -> None:
    world = ObservedWorld(addons={CLOUDWATCH_ADDON: "ACTIVE"})
    port = FakePort(world)
    await converge(port, {"container_insights": False}, "container_insights")
    assert CLOUDWATCH_ADDON not in world.addons
    await converge(port, {"container_insights": True}, "container_insights")
    assert world.addons[CLOUDWATCH_ADDON] == "ACTIVE"
    assert world.calls == ["DeleteAddon", "CreateAddon"]
