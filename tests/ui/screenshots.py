"""Screenshots of the web UI's main pages for docs/screenshots (used by README.md).

    python -m tests.ui.screenshots [OUTPUT_DIR]

Starts the real stack against the simulated AWS (a slowed-down profile, so a creation is caught
in flight), drives Debian's Chromium through the pages and writes PNG files.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

from sim.k8s import KubeWorld
from tests.e2e.conftest import TOKEN, cluster_spec
from tests.ui.conftest import CHROMIUM_FLAGS, chromium_path
from tests.ui.stack import simulated_stack

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def shoot(page: Page, out: Path, name: str) -> None:
    page.wait_for_timeout(300)
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)
    print(out / f"{name}.png")


def main(out: Path) -> None:
    executable = chromium_path()
    if executable is None:
        raise SystemExit("Debian's chromium is not installed (/usr/bin/chromium): make install")
    out.mkdir(parents=True, exist_ok=True)
    with simulated_stack("fast*6") as (running, sim):
        api = running.client
        spec = cluster_spec(api, "research")
        first = api.post("/api/v1/clusters", spec).json()["operation_id"]
        assert api.wait(first, timeout=300)["status"] == "succeeded"
        api.http.put("/api/v1/clusters/active", json={"name": "research"})
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
            page = browser.new_page(
                viewport={"width": 1280, "height": 800}, base_url=running.stack.url
            )
            page.goto("/")
            shoot(page, out, "sign-in")
            page.get_by_label("API token").fill(TOKEN)
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("heading", name="Clusters", level=1)).to_be_visible()
            shoot(page, out, "clusters")

            page.goto("/#/clusters/new")
            page.get_by_label("Cluster name").fill("llm-training")
            zone = page.get_by_label("Availability Zone")
            expect(zone.locator("option[value='use1-az2']")).to_be_attached()
            zone.select_option("use1-az2")
            itype = page.get_by_label("Instance type")
            expect(itype.locator("option[value='ml.g5.8xlarge']")).to_be_attached()
            itype.select_option("ml.g5.8xlarge")
            page.get_by_label("Instance count").fill("4")
            expect(page.locator(".quota")).to_contain_text("available")
            shoot(page, out, "create-form")

            page.get_by_role("button", name="Create cluster").click()
            expect(page.locator(".stage[data-status='succeeded']").nth(3)).to_be_attached(
                timeout=120_000
            )
            shoot(page, out, "progress")
            expect(page.locator(".op-summary .status-succeeded")).to_be_visible(timeout=300_000)

            page.goto("/#/clusters/research")
            expect(page.get_by_role("switch", name="Tiered checkpointing")).to_be_visible()
            expect(page.locator("tr[data-node]").first).to_be_visible()
            page.get_by_role("switch", name="Managed autoscaling").check()
            page.get_by_role("button", name="Apply changes").click()
            expect(page.get_by_role("list", name="Diff")).to_be_visible()
            shoot(page, out, "cluster-detail")

            page.goto("/#/clusters/research/jobs")
            page.get_by_label("Job name").fill("llama-sft")
            page.get_by_role("button", name="Submit job").click()
            page.get_by_role("link", name="job and logs").click()
            expect(page.get_by_label("Log lines")).to_contain_text("step 3/", timeout=120_000)
            shoot(page, out, "training-job")

            # a container killed for memory and restarted in place, on the Diagnostics page
            kube = sim.ctx.kube
            assert isinstance(kube, KubeWorld)
            server = kube.api_server("research")
            server.apply(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": "data-prep",
                        "namespace": "default",
                        "annotations": {"sim.hyperpilot.dev/steps": "100000"},
                    },
                    "spec": {
                        "containers": [
                            {"name": "main", "image": "pytorch:2", "command": ["python", "prep.py"]}
                        ]
                    },
                }
            )
            prep = "/api/v1/clusters/research/pods/default/data-prep/logs"
            while "step 3/" not in api.get(prep).text:
                time.sleep(0.5)
            server.run_on_loop(server.kubelet.crash, "default", "data-prep", None, 137, "OOMKilled")
            pods_url = "/api/v1/clusters/research/pods"
            while not any(
                p["name"] == "data-prep" and p["restarts"] == 1 and p["status"] == "Running"
                for p in api.get(pods_url).json()["pods"]
            ):
                time.sleep(0.5)
            page.goto("/#/clusters/research/diagnostics")
            events = page.get_by_role("region", name="Kubernetes events")
            events.get_by_label("Warning only").check()
            expect(events.locator("tr[data-object='data-prep']").first).to_be_visible()
            pods = page.get_by_role("region", name="Pods")
            expect(pods.locator("tr[data-pod='data-prep'] .restarts")).to_have_text("1")
            pods.get_by_role("button", name="Log of data-prep").click()
            page.get_by_label("Previous container").check()
            expect(page.get_by_label("Pod log lines")).to_have_attribute("data-previous", "true")
            shoot(page, out, "diagnostics")
            # the cluster's two GPUs: the job gives its own back for the endpoint
            gone = api.delete("/api/v1/clusters/research/jobs/llama-sft").json()["operation_id"]
            api.wait(gone)

            page.goto("/#/endpoints")
            page.get_by_label("Cluster", exact=True).select_option("research")
            picker = page.get_by_label("Instance type", exact=True)
            expect(picker).to_have_value("ml.g5.8xlarge")
            page.get_by_label("Endpoint name").fill("qwen-chat")
            page.get_by_role("button", name="Deploy").click()
            page.locator("#main").get_by_role("link", name="endpoint", exact=True).click()
            expect(page.locator(".summary .status-available")).to_be_visible(timeout=120_000)
            page.get_by_role("button", name="Send").click()
            expect(page.locator("pre.answer")).not_to_be_empty()
            shoot(page, out, "endpoint")

            page.goto("/#/operations")
            expect(page.locator("table.list tbody tr").first).to_be_visible()
            shoot(page, out, "operations")

            page.set_viewport_size({"width": 360, "height": 740})
            page.goto("/#/clusters")
            expect(page.locator("tr[data-cluster]").first).to_be_visible()
            time.sleep(0.2)
            shoot(page, out, "clusters-narrow")
            browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
