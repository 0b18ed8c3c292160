"""The HAMi feature: its chart's objects in dependency order (the webhook only once the scheduler
is available), the diff and dry run, removal in reverse, and objects another tool installed left
alone with the reason."""

from __future__ import annotations

import pytest

from cluster_svc.domain.components.base import object_ref
from cluster_svc.domain.features.hami import DEVICE_PLUGIN, SCHEDULER, WEBHOOK, hami_objects
from cluster_svc.domain.features.plan import describe, plan
from cluster_svc.domain.features.steps import Apply, feature_steps
from shared.contracts.features import FeaturesChange
from shared.errors import PermanentError
from tests.features.fakes import World, names
from tests.features.test_domain import ops

ON = FeaturesChange(hami=True)
OFF = FeaturesChange(hami=False)


def _scheduler_ref() -> tuple[str, str, str, str | None]:
    return object_ref(next(o for o in hami_objects() if o["kind"] == "Deployment"))


def test_the_chart_objects_are_named_as_helm_renders_release_hami() -> None:
    by_kind = {(o["kind"], o["metadata"]["name"]) for o in hami_objects()}
    assert ("Deployment", SCHEDULER) in by_kind and ("DaemonSet", DEVICE_PLUGIN) in by_kind
    assert ("MutatingWebhookConfiguration", WEBHOOK) in by_kind
    plugin = next(o for o in hami_objects() if o["kind"] == "DaemonSet")
    assert plugin["metadata"]["namespace"] == "kube-system"
    assert plugin["spec"]["template"]["spec"]["nodeSelector"] == {"gpu": "on"}
    extender = next(o for o in hami_objects() if o["kind"] == "Deployment")
    containers = [c["name"] for c in extender["spec"]["template"]["spec"]["containers"]]
    assert containers == ["kube-scheduler", "vgpu-scheduler-extender"]


def test_install_waits_for_the_scheduler_before_the_webhook() -> None:
    world = World()
    steps = feature_steps(names(), world.actual(), ON, "hami")
    assert ops(steps)[-1] == "wait" and "apply MutatingWebhookConfiguration" not in ops(steps)
    assert ops(steps).index("apply Deployment") < ops(steps).index("apply DaemonSet")
    for step in steps:
        if isinstance(step, Apply):
            world.objects[object_ref(step.obj)] = step.obj
    world.objects[_scheduler_ref()] = {
        **world.objects[_scheduler_ref()],
        "status": {"availableReplicas": 1},
    }
    assert ops(feature_steps(names(), world.actual(), ON, "hami")) == [
        "apply MutatingWebhookConfiguration"
    ]
    for step in feature_steps(names(), world.actual(), ON, "hami"):
        assert isinstance(step, Apply)
        world.objects[object_ref(step.obj)] = step.obj
    assert feature_steps(names(), world.actual(), ON, "hami") == []
    shown = describe(names(), world.actual())["hami"]
    assert shown["enabled"] and shown["installed_by_hyperpilot"] and shown["scheduler_available"]
    assert shown["version"] == "2.6.1"

    # off: the webhook goes first, then the rest in reverse; the dry run diffs enabled
    dry = plan(names(), world.actual(), OFF)
    assert dry.diff["hami"].actual is True and dry.diff["hami"].requested is False
    assert dry.objects[0].kind == "MutatingWebhookConfiguration"
    assert {o.action for o in dry.objects} == {"delete"}
    assert len(dry.objects) == len(hami_objects())


def test_a_dry_run_on_a_cluster_without_hami_lists_the_chart() -> None:
    dry = plan(names(), World().actual(), ON)
    assert dry.diff["hami"].actual is False and not dry.noop
    assert [o.name for o in dry.objects][:3] == [SCHEDULER, SCHEDULER, SCHEDULER]
    assert any("hami-scheduler Deployment is available" in n for n in dry.notes)
    assert plan(names(), World().actual(), OFF).noop


def test_hami_installed_by_another_tool_is_not_removed() -> None:
    world = World()
    plugin = next(o for o in hami_objects() if o["kind"] == "DaemonSet")
    foreign = {**plugin, "metadata": {**plugin["metadata"], "labels": {"app": "hami"}}}
    world.objects[object_ref(plugin)] = foreign
    assert describe(names(), world.actual())["hami"]["installed_by_hyperpilot"] is False
    with pytest.raises(PermanentError) as refused:
        feature_steps(names(), world.actual(), OFF, "hami")
    assert "installed by another tool" in refused.value.message
    assert "helm uninstall hami" in (refused.value.hint or "")
