"""The declared component set and the pure reconcile plan."""

from __future__ import annotations

import dataclasses

import pytest

from cluster_svc.domain.components.base import (
    COMPONENT_LABEL,
    VERSION_LABEL,
    Component,
    object_ref,
)
from cluster_svc.domain.dependencies import (
    ABSENT,
    DEPENDENCY_SET_VERSION,
    Observed,
    dependency_set,
    objects_to_apply,
    observe_manifests,
    ordered,
    plan,
)

COMPONENTS = dependency_set("llm", "us-east-1")


def installed_as_declared(components: list[Component]) -> dict[str, Observed]:
    return {c.name: Observed(c.version, "ready", True) for c in components}


def test_the_set_is_versioned_and_holds_what_hyperpod_needs() -> None:
    assert DEPENDENCY_SET_VERSION == "2026.11"
    names = [c.name for c in COMPONENTS]
    assert len(names) == len(set(names))
    addons = {c.name for c in COMPONENTS if c.kind == "eks-addon"}
    assert addons == {
        "aws-mountpoint-s3-csi-driver",
        "aws-fsx-csi-driver",
        "cert-manager",
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-cloudwatch-observability",
    }
    for wanted in (
        "namespaces",
        "health-monitoring-agent",
        "deep-health-check",
        "job-auto-restart",
        "nvidia-device-plugin",
        "aws-efa-k8s-device-plugin",
        "training-operators",
        "mpi-operator",
        "hyperpod-pytorchjob-crd",
        "kuberay-operator",
        "aws-load-balancer-controller",
        "keda",
    ):
        assert wanted in names
    crds = {
        obj["metadata"]["name"]
        for c in COMPONENTS
        for obj in c.manifests
        if obj["kind"] == "CustomResourceDefinition"
    }
    assert crds == {
        "pytorchjobs.kubeflow.org",
        "mpijobs.kubeflow.org",
        "hyperpodpytorchjobs.sagemaker.amazonaws.com",
        "rayclusters.ray.io",
        "rayjobs.ray.io",
        "scaledobjects.keda.sh",
    }


def test_every_manifest_is_labelled_with_its_component_and_chart_version() -> None:
    refs = set()
    for component in COMPONENTS:
        assert component.kind == "eks-addon" or component.manifests
        for obj in component.objects():
            labels = obj["metadata"]["labels"]
            assert labels[COMPONENT_LABEL] == component.name
            assert labels[VERSION_LABEL] == component.version
            ref = object_ref(obj)
            assert ref not in refs, f"{ref} declared twice"
            refs.add(ref)


def test_cluster_specific_values_reach_the_manifests() -> None:
    lbc = next(
        c for c in dependency_set("prod-a", "eu-west-1") if c.name == "aws-load-balancer-controller"
    )
    deployment = next(o for o in lbc.manifests if o["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--cluster-name=prod-a" in args and "--aws-region=eu-west-1" in args
    agent = next(
        c for c in dependency_set("prod-a", "eu-west-1") if c.name == "health-monitoring-agent"
    )
    images = {
        o["spec"]["template"]["spec"]["containers"][0]["image"]
        for o in agent.manifests
        if o["kind"] == "DaemonSet"
    }
    assert images == {
        "533267293120.dkr.ecr.eu-west-1.amazonaws.com/hyperpod-health-monitoring-agent:1.0.935.0_1.0.282.0"
    }


def test_fresh_cluster_installs_everything_in_order() -> None:
    steps = plan(COMPONENTS, {})
    assert [s.action for s in steps] == ["install"] * len(COMPONENTS)
    assert [s.component.name for s in steps] == [c.name for c in COMPONENTS]
    position = {s.component.name: i for i, s in enumerate(steps)}
    for step in steps:
        for required in step.component.requires:
            assert position[required] < position[step.component.name]
    assert position["cert-manager"] < position["amazon-sagemaker-hyperpod-training-operator"]


def test_same_versions_are_all_unchanged() -> None:
    steps = plan(COMPONENTS, installed_as_declared(COMPONENTS))
    assert {s.action for s in steps} == {"unchanged"}


def test_one_bumped_component_is_the_only_upgrade() -> None:
    installed = installed_as_declared(COMPONENTS)
    installed["keda"] = Observed("2.16.0", "ready", True)
    installed["cert-manager"] = Observed("v1.17.2-eksbuild.1", "ready", True)
    steps = {s.component.name: s for s in plan(COMPONENTS, installed)}
    assert {n for n, s in steps.items() if s.action != "unchanged"} == {"keda", "cert-manager"}
    assert steps["keda"].action == "upgrade" and steps["keda"].installed == "2.16.0"
    assert steps["cert-manager"].action == "upgrade"


def test_busy_components_wait_and_external_ones_are_left_alone() -> None:
    installed = installed_as_declared(COMPONENTS)
    installed["cert-manager"] = Observed("v1.17.2-eksbuild.1", "busy", True, "UPDATING")
    installed["kuberay-operator"] = Observed("1.7.0", "external", False)
    steps = {s.component.name: s.action for s in plan(COMPONENTS, installed)}
    assert steps["cert-manager"] == "wait"
    assert steps["kuberay-operator"] == "unchanged"


def test_requires_reorders_a_declaration_that_puts_a_dependent_first() -> None:
    a = Component("operator", "eks-addon", "v2", "x", requires=("crds",))
    b = Component("crds", "manifests", "1", "", requires=("namespaces",))
    c = Component("namespaces", "manifests", "1", "")
    d = Component("standalone", "manifests", "1", "")
    assert [x.name for x in ordered([a, d, b, c])] == [
        "namespaces",
        "crds",
        "operator",
        "standalone",
    ]
    assert [s.component.name for s in plan([a, d, b, c], {})] == [
        "namespaces",
        "crds",
        "operator",
        "standalone",
    ]
    with pytest.raises(ValueError, match="unknown component"):
        ordered([Component("x", "manifests", "1", "", requires=("y",))])
    with pytest.raises(ValueError, match="cycle"):
        ordered(
            [
                Component("x", "manifests", "1", "", requires=("y",)),
                Component("y", "manifests", "1", "", requires=("x",)),
            ]
        )


def _component(name: str = "kuberay-operator") -> Component:
    """One declared component on its own (its requirements dropped)."""
    return dataclasses.replace(next(c for c in COMPONENTS if c.name == name), requires=())


def test_observe_manifests_reads_the_version_label_back() -> None:
    component = _component()
    objects = component.objects()
    for obj in objects:
        if obj["kind"] == "CustomResourceDefinition":
            obj["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
    assert observe_manifests(component, [None] * len(objects)) == ABSENT
    assert observe_manifests(component, objects) == Observed("1.7.0", "ready", True)
    older = [
        dict(
            o,
            metadata={
                **o["metadata"],
                "labels": {**o["metadata"]["labels"], VERSION_LABEL: "1.3.0"},
            },
        )
        for o in objects
    ]
    assert observe_manifests(component, older).version == "1.3.0"
    partly = [*objects[:-1], None]
    assert observe_manifests(component, partly).version is None
    assert objects_to_apply(component, partly) == [component.objects()[-1]]
    assert objects_to_apply(component, objects) == []
    assert len(objects_to_apply(component, older)) == len(objects)


def test_objects_made_by_others_count_as_provided_and_are_never_applied() -> None:
    crd = _component("hyperpod-pytorchjob-crd")
    theirs = dict(
        crd.manifests[0], status={"conditions": [{"type": "Established", "status": "True"}]}
    )
    observed = observe_manifests(crd, [theirs])
    assert observed.state == "external" and not observed.managed
    assert objects_to_apply(crd, [theirs]) == []
    assert plan([crd], {crd.name: observed})[0].action == "unchanged"


def test_a_crd_not_yet_established_makes_its_component_wait() -> None:
    component = _component()
    objects = component.objects()  # no status: the API server has not established them yet
    observed = observe_manifests(component, objects)
    assert observed.state == "busy"
    assert plan([component], {component.name: observed})[0].action == "wait"


def test_components_are_immutable_declarations() -> None:
    component = _component()
    with pytest.raises(dataclasses.FrozenInstanceError):
        component.version = "9"  # type: ignore[misc]
