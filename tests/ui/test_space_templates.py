"""The spaces page's template picker in Chromium against the real stack: with a WorkspaceTemplate
an admin applied with kubectl, the form lists it, picking it fills the form with its defaults
and names its bounds, and the space made from it runs with the template's GPU; axe finds nothing
at 1280 and 420 px."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack
from tests.e2e.test_cluster_lifecycle import _kubeconfig
from tests.ui.helpers import axe_violations

pytestmark = pytest.mark.slow

TEMPLATE = {
    "apiVersion": "workspace.jupyter.org/v1alpha1",
    "kind": "WorkspaceTemplate",
    "metadata": {"name": "gpu-small"},
    "spec": {
        "displayName": "GPU small",
        "description": "One GPU, JupyterLab",
        "defaultImage": "public.ecr.aws/sagemaker/sagemaker-distribution:latest-gpu",
        "appType": "jupyterlab",
        "defaultResources": {
            "requests": {"cpu": "2", "memory": "8Gi"},
            "limits": {"nvidia.com/gpu": "1"},
        },
        "resourceBounds": {"gpu": {"min": "0", "max": "1"}},
        "defaultIdleShutdown": {"enabled": True, "idleTimeoutInMinutes": 240},
    },
}


def test_the_space_form_picks_a_template(
    page: Any,
    created_cluster: tuple[RunningStack, str],
    sim_aws: SimulatedAws,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    stack, cluster = created_cluster
    api = stack.client
    answer = api.http.patch(f"/api/v1/clusters/{cluster}/features", json={"spaces": True})
    assert answer.status_code == 202, answer.text
    assert api.wait(answer.json()["operation_id"], timeout=120)["status"] in ("succeeded", "noop")
    config = _kubeconfig(sim_aws, cluster, tmp_path / "config")
    (tmp_path / "t.json").write_text(json.dumps(TEMPLATE))
    kubectl = Path(sys.executable).parent / "kubectl"
    applied = subprocess.run(
        [str(kubectl), "--kubeconfig", str(config), "apply", "-f", str(tmp_path / "t.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert applied.returncode == 0, applied.stderr

    page.goto(f"/#/clusters/{cluster}/spaces")
    expect(page.get_by_role("heading", name="Spaces", level=1)).to_be_visible()
    picker = page.get_by_label("Template")
    expect(picker.locator("option[value='gpu-small']")).to_be_attached(timeout=30_000)
    picker.select_option("gpu-small")
    expect(page.get_by_label("GPUs")).to_have_value("1")
    expect(page.get_by_label("Memory")).to_have_value("8Gi")
    expect(page.get_by_text("Allowed: GPUs 0 to 1.")).to_be_visible()
    assert not axe_violations(page)
    page.get_by_label("Space name").fill("picked")
    page.get_by_label("Storage claim to mount (optional)").fill("")
    page.get_by_role("button", name="Create space").click()
    row = page.locator("tr[data-space='picked']")
    expect(row.get_by_text("Running")).to_be_visible(timeout=90_000)
    described = api.get(f"/api/v1/clusters/{cluster}/spaces/picked").json()
    assert described["gpu"] == 1
    assert described["image"] == TEMPLATE["spec"]["defaultImage"]
    page.set_viewport_size({"width": 420, "height": 900})
    page.wait_for_timeout(300)
    assert not axe_violations(page)
