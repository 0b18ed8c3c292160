"""Screenshots of the web UI's main pages for docs/screenshots (used by README.md).

    python -m tests.ui.screenshots [OUTPUT_DIR]

Starts the real stack against the simulated AWS (a slowed-down profile, so a creation is caught
in flight), drives Debian's Chromium through the pages and writes PNG files. Every step has a
deadline: past it the run stops with an error naming the step and what it waited for (the
stack is torn down), instead of waiting for ever.
"""

from __future__ import annotations

import _thread
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from playwright.sync_api import Locator, Page, expect, sync_playwright

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from tests.e2e.conftest import TOKEN, Client, RunningStack
from tests.ui.conftest import CHROMIUM_FLAGS, chromium_path
from tests.ui.stack import simulated_stack

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


class StepTimeout(SystemExit):
    """A step of the run went past its deadline."""


@contextlib.contextmanager
def step(name: str, seconds: float) -> Iterator[None]:
    """Run the block within `seconds`, or stop the run saying which step hung: the watchdog
    interrupts the main thread (a Playwright call or a poll loop), whose cleanup still runs."""
    fired = threading.Event()

    def expire() -> None:
        fired.set()
        _thread.interrupt_main()

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    started = time.monotonic()
    print(f"step {name} (at most {seconds:.0f} s)", flush=True)
    timer.start()
    try:
        yield
    except KeyboardInterrupt:
        if fired.is_set():
            raise StepTimeout(
                f"screenshots: step {name!r} did not finish within {seconds:.0f} s"
            ) from None
        raise
    finally:
        timer.cancel()
    print(f"step {name}: {time.monotonic() - started:.1f} s", flush=True)


def until(what: str, predicate: Callable[[], bool], seconds: float) -> None:
    """Poll `predicate` every half second; past `seconds` stop, saying what never happened."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise StepTimeout(f"screenshots: {what} did not happen within {seconds:.0f} s")
        time.sleep(0.5)


def offered(page: Page, picker: Locator, instance_type: str, again: Callable[[], None]) -> None:
    """Wait for `instance_type` in `picker`. The types are read live from EC2 (every type, every
    zone): on a loaded machine cluster-svc may not answer within the gateway's 15 s, and the
    picker says "Instance types unavailable"; then `again` asks once more (at most 4 times)."""
    option = picker.locator(f"option[value='{instance_type}']")
    for _ in range(4):
        with contextlib.suppress(AssertionError):
            expect(option).to_be_attached(timeout=40_000)
            return
        if "unavailable" not in (picker.text_content() or ""):
            break
        again()
    expect(option).to_be_attached(timeout=1_000)


def shoot(page: Page, out: Path, name: str) -> None:
    page.wait_for_timeout(300)
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)
    print(out / f"{name}.png")


def main(out: Path) -> None:
    executable = chromium_path()
    if executable is None:
        raise SystemExit("Debian's chromium is not installed (/usr/bin/chromium): make install")
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        with step("start the stack", 180):
            running, sim = stack.enter_context(simulated_stack("fast*6"))
        shots(out, executable, running, sim)


def shots(out: Path, executable: str, running: RunningStack, sim: SimulatedAws) -> None:
    api = running.client
    with step("create the cluster research through REST", 360):
        until(
            "cluster-svc answering the zones",
            lambda: api.get("/api/v1/inspect/availability-zones").status_code == 200,
            60,
        )
        # two ml.g5.8xlarge (one A10G each) in a zone that offers them
        spec = {
            "name": "research",
            "availability_zone_id": "use1-az1",
            "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 2}],
        }
        first = api.post("/api/v1/clusters", spec).json()["operation_id"]
        assert api.wait(first, timeout=330)["status"] == "succeeded"
        api.http.put("/api/v1/clusters/active", json={"name": "research"})
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800}, base_url=running.stack.url)
        page.set_default_timeout(30_000)
        # the pages read live AWS state (instance types of every zone, quotas): seconds when the
        # machine is busy; each step's deadline still bounds the run
        expect.set_options(timeout=30_000)
        with step("sign-in and clusters", 60):
            page.goto("/")
            shoot(page, out, "sign-in")
            page.get_by_label("API token").fill(TOKEN)
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("heading", name="Clusters", level=1)).to_be_visible()
            fleet = page.get_by_role("region", name="Fleet")
            expect(fleet.locator("tr[data-fleet='research'] td[data-key='cost']")).to_contain_text(
                "$"
            )
            shoot(page, out, "clusters")

        with step("create form", 60):
            page.goto("/#/clusters/new")
            page.get_by_label("Cluster name").fill("llm-training")
            zone = page.get_by_label("Availability Zone")
            expect(zone.locator("option[value='use1-az2']")).to_be_attached()
            zone.select_option("use1-az2")
            itype = page.get_by_label("Instance type")

            def rezone() -> None:
                zone.select_option("use1-az1")
                zone.select_option("use1-az2")

            offered(page, itype, "ml.g5.8xlarge", rezone)
            itype.select_option("ml.g5.8xlarge")
            page.get_by_label("Instance count").fill("4")
            expect(page.locator(".quota")).to_contain_text("available")
            shoot(page, out, "create-form")

        with step("progress of llm-training", 420):
            page.get_by_role("button", name="Create cluster").click()
            expect(page.locator(".stage[data-status='succeeded']").nth(3)).to_be_attached(
                timeout=120_000
            )
            shoot(page, out, "progress")
            expect(page.locator(".op-summary .status-succeeded")).to_be_visible(timeout=300_000)

        with step("cluster detail with the autoscaling plan", 90):
            page.goto("/#/clusters/research")
            expect(page.get_by_role("switch", name="Tiered checkpointing")).to_be_visible()
            expect(page.locator("tr[data-node]").first).to_be_visible()
            page.get_by_role("switch", name="Managed autoscaling").check()
            expect(page.get_by_role("list", name="Plan of the change")).to_contain_text(
                "UpdateCluster"
            )
            page.get_by_role("group", name="Karpenter settings").scroll_into_view_if_needed()
            shoot(page, out, "cluster-detail")
            page.get_by_role("switch", name="Managed autoscaling").uncheck()

        with step("training job with its log", 180):
            page.goto("/#/clusters/research/jobs")
            page.get_by_label("Job name").fill("llama-sft")
            page.get_by_role("button", name="Submit job").click()
            page.get_by_role("link", name="job and logs").click()
            expect(page.get_by_label("Log lines")).to_contain_text("step 3/", timeout=120_000)
            shoot(page, out, "training-job")

        with step("diagnostics of a container killed for memory", 180):
            diagnostics(page, out, api, sim)

        with step("endpoint deployed and tried", 240):
            # the cluster's two GPUs: the job gives its own back for the endpoint
            gone = api.delete("/api/v1/clusters/research/jobs/llama-sft").json()["operation_id"]
            api.wait(gone, timeout=120)
            page.goto("/#/endpoints")
            target = page.get_by_label("Cluster", exact=True)
            target.select_option("research")
            picker = page.get_by_label("Instance type", exact=True)

            def reread() -> None:
                target.select_option("llm-training")
                target.select_option("research")

            offered(page, picker, "ml.g5.8xlarge", reread)
            expect(picker).to_have_value("ml.g5.8xlarge")
            page.get_by_label("Endpoint name").fill("qwen-chat")
            page.get_by_role("button", name="Deploy").click()
            page.locator("#main").get_by_role("link", name="endpoint", exact=True).click()
            expect(page.locator(".summary .status-available")).to_be_visible(timeout=120_000)
            page.get_by_role("button", name="Send").click()
            expect(page.locator("pre.answer")).not_to_be_empty()
            shoot(page, out, "endpoint")

        with step("operations", 60):
            page.goto("/#/operations")
            expect(page.locator("table.list tbody tr").first).to_be_visible()
            shoot(page, out, "operations")

        with step("clusters at 360 px", 60):
            page.set_viewport_size({"width": 360, "height": 740})
            page.goto("/#/clusters")
            expect(page.locator("tr[data-cluster]").first).to_be_visible()
            time.sleep(0.2)
            shoot(page, out, "clusters-narrow")
        browser.close()


def diagnostics(page: Page, out: Path, api: Client, sim: SimulatedAws) -> None:
    """A training container killed for memory (137, OOMKilled) and restarted in place."""
    kube = sim.ctx.kube
    assert isinstance(kube, KubeWorld)
    server = kube.api_server("research")
    # a training launcher in the command: the emulated container logs step lines (a bare
    # `python prep.py` does not train, and would never log "step 3/")
    server.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "finetune",
                "namespace": "default",
                "annotations": {"sim.hyperpilot.dev/steps": "100000"},
            },
            "spec": {
                "containers": [
                    {"name": "main", "image": "pytorch:2", "command": ["python", "train.py"]}
                ]
            },
        }
    )
    log = "/api/v1/clusters/research/pods/default/finetune/logs"
    until("finetune logging step 3/", lambda: "step 3/" in api.get(log).text, 90)
    server.run_on_loop(server.kubelet.crash, "default", "finetune", None, 137, "OOMKilled")
    pods = "/api/v1/clusters/research/pods"
    until(
        "finetune restarted once and Running",
        lambda: any(
            p["name"] == "finetune" and p["restarts"] == 1 and p["status"] == "Running"
            for p in api.get(pods).json()["pods"]
        ),
        60,
    )
    page.goto("/#/clusters/research/diagnostics")
    events = page.get_by_role("region", name="Kubernetes events")
    events.get_by_label("Warning only").check()
    expect(events.locator("tr[data-object='finetune']").first).to_be_visible()
    region = page.get_by_role("region", name="Pods")
    expect(region.locator("tr[data-pod='finetune'] .restarts")).to_have_text("1")
    region.get_by_role("button", name="Log of finetune").click()
    page.get_by_label("Previous container").check()
    expect(page.get_by_label("Pod log lines")).to_have_attribute("data-previous", "true")
    shoot(page, out, "diagnostics")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
