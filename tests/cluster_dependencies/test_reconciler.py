"""Reconciliation against in-memory ports: install in order, requirements waited for, a second
run that changes nothing, upgrades of exactly what changed, and the errors a user sees."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cluster_svc.domain.components.base import Component
from cluster_svc.domain.dependencies import (
    Reconciler,
    Target,
    create_stages,
    delete_stages,
    dependency_set,
)
from shared.errors import PermanentError
from shared.stages import Done, Pending, Submitted
from tests.cluster_dependencies.fakes import FakeAddons, FakeKube, FakeKubeFactory
from tests.cluster_dependencies.helpers import Contexts, create_command, eks_outputs

TARGET = Target("llm", "1.32", "op-1")
COMPONENTS = dependency_set("llm", "us-east-1")


def bumped(name: str, version: str) -> list[Component]:
    return [dataclasses.replace(c, version=version) if c.name == name else c for c in COMPONENTS]


async def converge(rec: Reconciler, addons: FakeAddons, passes: int = 6) -> dict[str, Any]:
    previous: dict[str, Any] = {}
    for _ in range(passes):
        result = await rec.run_pass(TARGET, previous)
        previous = result.outputs()
        if result.complete:
            return previous
        addons.settle()
    raise AssertionError(f"did not converge: {previous}")


async def test_fresh_cluster_installs_in_order_and_waits_for_requirements() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    rec = Reconciler(COMPONENTS, kube, addons)

    first = await rec.run_pass(TARGET, {})
    assert not first.complete and first.mutated
    status = {n: c["status"] for n, c in first.components.items()}
    # the training operator needs cert-manager ACTIVE; the CRD needs the training operator
    assert status["amazon-sagemaker-hyperpod-training-operator"] == "waiting"
    assert status["hyperpod-pytorchjob-crd"] == "waiting"
    assert status["cert-manager"] == "installing"
    assert status["keda"] == "installed"  # manifests are ready once applied and established
    assert (
        "create",
        "amazon-sagemaker-hyperpod-training-operator",
        "v1.1.0-eksbuild.1",
    ) not in addons.calls
    assert first.ready == len(COMPONENTS) - 6  # 5 add-ons creating + the CRD waiting

    addons.settle()
    second = await rec.run_pass(TARGET, first.outputs())
    assert addons.calls[-1] == (
        "create",
        "amazon-sagemaker-hyperpod-training-operator",
        "v1.1.0-eksbuild.1",
    )
    assert second.components["cert-manager"]["status"] == "installed"
    assert second.components["hyperpod-pytorchjob-crd"]["status"] == "waiting"

    addons.settle()
    third = await rec.run_pass(TARGET, second.outputs())
    assert third.complete
    assert {c["status"] for c in third.components.values()} == {"installed"}
    assert third.created == sorted(c.name for c in COMPONENTS if c.kind == "eks-addon")
    assert [c[0] for c in addons.calls] == ["create"] * 5
    # namespaces are applied before anything that lives in them
    applied = [k for op, k in kube.mutations if op == "apply"]
    first_ns = applied.index(("v1", "Namespace", "", "kubeflow"))
    assert first_ns < applied.index(("apps/v1", "Deployment", "kubeflow", "training-operator"))


async def test_a_second_run_is_all_unchanged_with_no_mutating_call() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    await converge(Reconciler(COMPONENTS, kube, addons), addons)
    mutations, calls = list(kube.mutations), list(addons.calls)

    again = await Reconciler(COMPONENTS, kube, addons).run_pass(TARGET, {})
    assert again.complete and not again.mutated
    assert {c["status"] for c in again.components.values()} == {"unchanged"}
    assert kube.mutations == mutations and addons.calls == calls


async def test_only_the_bumped_component_is_upgraded() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    await converge(Reconciler(COMPONENTS, kube, addons), addons)
    before = len(kube.mutations)

    newer = bumped("keda", "2.18.0")
    result = await Reconciler(newer, kube, addons).run_pass(TARGET, {})
    status = {n: c["status"] for n, c in result.components.items()}
    assert status.pop("keda") == "upgraded"
    assert set(status.values()) == {"unchanged"}
    touched = {k for _, k in kube.mutations[before:]}
    keda = next(c for c in newer if c.name == "keda")
    assert len(touched) == len(keda.manifests)
    assert all(k[2] in ("keda", "") for k in touched)


async def test_an_addon_upgrade_waits_for_eks_to_finish() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    await converge(Reconciler(COMPONENTS, kube, addons), addons)
    newer = bumped("cert-manager", "v1.19.0-eksbuild.1")
    addons.offered = FakeAddons.offering(newer).offered
    rec = Reconciler(newer, kube, addons)

    first = await rec.run_pass(TARGET, {})
    assert addons.calls[-1] == ("update", "cert-manager", "v1.19.0-eksbuild.1")
    assert first.components["cert-manager"]["status"] == "upgrading" and not first.complete
    again = await rec.run_pass(TARGET, first.outputs())  # still UPDATING: no second update
    assert [c for c in addons.calls if c[0] == "update"] == [
        ("update", "cert-manager", "v1.19.0-eksbuild.1")
    ]
    assert again.components["cert-manager"]["status"] == "upgrading"
    addons.settle()
    done = await rec.run_pass(TARGET, again.outputs())
    assert done.complete and done.components["cert-manager"]["status"] == "upgraded"


async def test_addons_installed_by_someone_else_are_not_ours_to_delete() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    addons.preinstall("cert-manager", "v1.18.2-eksbuild.2", managed=False)
    outputs = await converge(Reconciler(COMPONENTS, kube, addons), addons)
    assert "cert-manager" not in outputs["created"]
    assert outputs["components"]["cert-manager"]["status"] == "unchanged"


async def test_a_failed_addon_stops_the_stage_with_the_next_step() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    addons.addons["aws-fsx-csi-driver"] = {
        "version": "v1.5.0-eksbuild.1",
        "status": "CREATE_FAILED",
        "managed": True,
    }
    with pytest.raises(PermanentError) as err:
        await Reconciler(COMPONENTS, kube, addons).run_pass(TARGET, {})
    assert err.value.code == "AddonFailed"
    assert "aws eks describe-addon --cluster-name llm --addon-name aws-fsx-csi-driver" in (
        err.value.hint or ""
    )


async def test_a_version_eks_does_not_offer_is_refused_before_any_call() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    addons.offered["cert-manager"] = ["v1.17.2-eksbuild.1"]
    with pytest.raises(PermanentError) as err:
        await Reconciler(COMPONENTS, kube, addons).run_pass(TARGET, {})
    assert err.value.code == "AddonVersionUnavailable"
    assert "v1.17.2-eksbuild.1" in err.value.message and "Kubernetes 1.32" in err.value.message
    assert ("create", "cert-manager", "v1.18.2-eksbuild.2") not in addons.calls


async def test_the_dependencies_stage_submits_polls_with_progress_and_records_components() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    factory = FakeKubeFactory(kube)
    stage = next(s for s in create_stages(factory, addons) if s.name == "dependencies")
    assert stage.needs == ("eks_cluster", "access_entries", "oidc_provider")
    assert stage.poll is not None
    ctx = Contexts("dependencies", create_command(), {"eks_cluster": eks_outputs()})

    submitted = ctx.keep(await stage.run(ctx()))
    assert isinstance(submitted, Submitted)
    assert submitted.external_id == "llm/dependencies/2026.11"
    assert factory.seen[0].name == "llm" and factory.seen[0].endpoint == "https://127.0.0.1:1"
    polled = await stage.poll(ctx())
    assert polled == Pending(f"{len(COMPONENTS) - 6}/{len(COMPONENTS)} components ready")
    for _ in range(4):
        addons.settle()
        polled = await stage.poll(ctx())
        if isinstance(polled, Done):
            break
    assert isinstance(polled, Done) and not polled.noop
    components = polled.outputs["components"]
    assert components["cert-manager"] == {"version": "v1.18.2-eksbuild.2", "status": "installed"}
    assert components["keda"] == {"version": "2.17.1", "status": "installed"}
    assert polled.outputs["dependency_set"] == "2026.11"

    rerun = Contexts("dependencies", create_command(), {"eks_cluster": eks_outputs()})
    result = await stage.run(rerun())
    assert isinstance(result, Done) and result.noop
    assert {c["status"] for c in result.outputs["components"].values()} == {"unchanged"}


async def test_delete_removes_only_the_addons_this_control_plane_installed() -> None:
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    addons.preinstall("amazon-cloudwatch-observability", "v4.1.0-eksbuild.1", managed=False)
    created = await converge(Reconciler(COMPONENTS, kube, addons), addons)
    stages = {s.name: s for s in delete_stages(FakeKubeFactory(kube), addons)}
    stage = stages["delete_dependencies"]
    assert stage.needs == ("delete_storage", "delete_hyperpod") and stage.poll is not None
    command = {
        "name": "llm",
        "region": "us-east-1",
        "resources": {"eks_cluster": eks_outputs(), "dependencies": created},
    }
    ctx = Contexts("delete_dependencies", command, {})
    submitted = ctx.keep(await stage.run(ctx()))
    assert isinstance(submitted, Submitted)
    deleted = sorted(name for op, name, _ in addons.calls if op == "delete")
    assert deleted == sorted(created["created"])
    assert "amazon-cloudwatch-observability" not in deleted
    assert await stage.poll(ctx()) == Pending("0/4 add-ons removed")
    addons.settle()
    assert isinstance(await stage.poll(ctx()), Done)
    assert set(addons.addons) == {"amazon-cloudwatch-observability"}
    again = await stage.run(Contexts("delete_dependencies", command, {})())
    assert isinstance(again, Done) and again.noop


async def test_a_run_repeated_after_a_lost_submit_repeats_no_mutation() -> None:
    """A crash between the calls and the persisted Submitted: the redelivered run finds the
    add-ons creating and the manifests in place, and makes no call a second time."""
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    stage = next(
        s for s in create_stages(FakeKubeFactory(kube), addons) if s.name == "dependencies"
    )
    first = await stage.run(
        Contexts("dependencies", create_command(), {"eks_cluster": eks_outputs()})()
    )
    assert isinstance(first, Submitted)
    calls, mutations = list(addons.calls), list(kube.mutations)

    replay = await stage.run(
        Contexts("dependencies", create_command(), {"eks_cluster": eks_outputs()})()
    )
    assert isinstance(replay, Submitted)
    assert addons.calls == calls and kube.mutations == mutations
    statuses = {n: c["status"] for n, c in replay.outputs["components"].items()}
    assert statuses["cert-manager"] == "pending"  # CREATING: waited for, not created again


async def test_a_crd_the_addon_installed_is_left_alone_and_a_degraded_addon_does_not_block() -> (
    None
):
    kube, addons = FakeKube(), FakeAddons.offering(COMPONENTS)
    crd_component = next(c for c in COMPONENTS if c.name == "hyperpod-pytorchjob-crd")
    theirs = {
        **crd_component.manifests[0],
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }
    kube.put(theirs)  # as the training-operator add-on installs it: without our labels
    outputs = await converge(Reconciler(COMPONENTS, kube, addons), addons)
    assert outputs["components"]["hyperpod-pytorchjob-crd"]["status"] == "unchanged"
    crd_key = (
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "",
        "hyperpodpytorchjobs.sagemaker.amazonaws.com",
    )
    assert ("apply", crd_key) not in kube.mutations

    addons.addons["amazon-cloudwatch-observability"]["status"] = "DEGRADED"
    again = await Reconciler(COMPONENTS, kube, addons).run_pass(TARGET, {})
    assert again.complete and not again.mutated
    assert again.components["amazon-cloudwatch-observability"]["status"] == "degraded"
