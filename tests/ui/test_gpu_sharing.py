"""Fractional GPUs in Debian's Chromium: a HAMi share is refused at its field while HAMi is not
installed; HAMi is turned on from the features panel (its plan shown, then applied); a job with
a HAMi share and one with a MIG partition are submitted from the job form, and the pods the
emulator runs request exactly what the form chose."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from shared.contracts.gpu import MIG_PROFILES
from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack
from tests.e2e.test_fractional_gpus import (  # noqa: F401 - the fixture is used by name
    _node_of,
    _poll,
    _running_pods,
    _server,
    fractional_cluster,
)

# A cluster with MIG and HAMi groups built and driven in Chromium, minutes: in `make reliability`.
pytestmark = pytest.mark.slow


def _limits(pod: dict[str, Any]) -> dict[str, str]:
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    return {k: v for k, v in limits.items() if k.startswith("nvidia.com/")}


def _fill_job(page: Page, name: str, group: str, sharing: str) -> None:
    form = page.get_by_role("form", name="Submit a job")
    form.get_by_label("Job name").fill(name)
    form.get_by_label("Instance group").select_option(group)
    form.get_by_label("Script (pytorch)").fill("code/train.py")
    form.get_by_label("GPUs as").select_option(sharing)


def test_hami_from_the_panel_then_shares_and_partitions_from_the_job_form(
    page: Page,
    fractional_cluster: tuple[RunningStack, str, str],  # noqa: F811
    sim_aws: SimulatedAws,
) -> None:
    stack, cluster, mig_type = fractional_cluster
    api = stack.client
    server = _server(sim_aws, cluster)
    _poll(lambda: _node_of(server, "shared"))
    form = page.get_by_role("form", name="Submit a job")
    # a HAMi share before HAMi runs: the API's sentence at the memory field
    page.goto(f"/#/clusters/{cluster}/jobs")
    _fill_job(page, "share-a", "shared", "hami")
    form.get_by_label("GPU memory per virtual GPU (MiB)").fill("20000")
    form.get_by_label("GPU cores per virtual GPU (%)").fill("40")
    form.get_by_role("button", name="Submit job").click()
    error = form.locator(".gpu-hami .field-error").first
    # the API reads the cluster's objects first: its answer can take a few seconds
    expect(error).to_contain_text("HAMi is not installed on this cluster", timeout=30_000)
    expect(error).to_contain_text('{"hami": true}')
    expect(form.get_by_label("GPU memory per virtual GPU (MiB)")).to_have_attribute(
        "aria-invalid", "true"
    )

    # HAMi on from the features panel: the dry run's plan, then Apply
    page.goto(f"/#/clusters/{cluster}")
    switch = page.get_by_role("switch", name="HAMi GPU sharing")
    expect(switch).not_to_be_checked()
    switch.check()
    plan = page.get_by_role("list", name="Plan of the change")
    expect(plan).to_contain_text("HAMi GPU sharing: off -> on")
    expect(plan).to_contain_text("apply DaemonSet kube-system/hami-device-plugin")
    expect(plan).to_contain_text("apply Deployment kube-system/hami-scheduler")
    page.get_by_role("button", name="Apply changes").click()
    expect(page.locator(".result h3")).to_have_text("Submitted", timeout=30_000)
    expect(page.get_by_role("list", name="Diff")).to_contain_text("HAMi GPU sharing: off -> on")

    link = page.locator(".result").get_by_role("link", name="Follow the operation")
    operation = (link.get_attribute("href") or "").removeprefix("#/operations/")
    assert api.wait(operation, timeout=120)["status"] == "succeeded"
    hami = api.get(f"/api/v1/clusters/{cluster}/features").json()["hami"]
    assert hami["enabled"] and hami["installed_by_hyperpilot"] and hami["scheduler_available"]
    _poll(
        lambda: (
            "hami.io/node-nvidia-register"
            in ((_node_of(server, "shared") or {})["metadata"].get("annotations") or {})
        )
    )

    # the share from the form: one virtual GPU of 20000 MiB and 40% of the cores
    page.goto(f"/#/clusters/{cluster}/jobs")
    _fill_job(page, "share-a", "shared", "hami")
    form.get_by_label("GPU memory per virtual GPU (MiB)").fill("20000")
    form.get_by_label("GPU cores per virtual GPU (%)").fill("40")
    form.get_by_role("button", name="Submit job").click()
    expect(page.locator(".notice")).to_contain_text("Submitted share-a", timeout=30_000)
    pod = _poll(lambda: _running_pods(server, "share-a"))[0]
    assert _limits(pod) == {
        "nvidia.com/gpu": "1",
        "nvidia.com/gpumem": "20000",
        "nvidia.com/gpucores": "40",
    }

    # a MIG partition: the profiles of the group's type, the one it is partitioned into chosen
    profile = MIG_PROFILES[mig_type][0]
    _fill_job(page, "parts", "mig", "mig")
    chooser = form.get_by_label("MIG profile")
    expect(chooser).to_have_value(profile)
    assert chooser.locator("option").all_inner_texts() == list(MIG_PROFILES[mig_type])
    expect(form.locator(".gpu-mig")).to_contain_text(f"partitioned into {profile}")
    form.get_by_label("GPUs per replica").fill("2")
    form.get_by_role("button", name="Submit job").click()
    expect(page.locator(".notice")).to_contain_text("Submitted parts", timeout=30_000)
    pod = _poll(lambda: _running_pods(server, "parts"))[0]
    assert _limits(pod) == {f"nvidia.com/{profile}": "2"}
    node = _node_of(server, "mig")
    assert node is not None and pod["spec"]["nodeName"] == node["metadata"]["name"]

    # whole GPUs on a type without MIG: the form says so at the profile field, sends nothing
    _fill_job(page, "nomig", "gpu", "mig")
    expect(chooser).to_be_disabled()
    form.get_by_role("button", name="Submit job").click()
    expect(form.locator(".gpu-mig .field-error")).to_contain_text("has no MIG partitions")
    for job in ("share-a", "parts"):
        api.wait(api.delete(f"/api/v1/clusters/{cluster}/jobs/{job}").json()["operation_id"])
