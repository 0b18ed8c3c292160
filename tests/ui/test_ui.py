"""The web UI in Debian's Chromium against the real stack and the simulated AWS."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, Request, expect

from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack, unique

# Records every status a stage row shows, in order, as the DOM changes.
WATCH_STAGES = """
() => {
  window.__stages = {};
  const record = (row) => {
    const seen = (window.__stages[row.dataset.stage] ||= []);
    if (seen[seen.length - 1] !== row.dataset.status) seen.push(row.dataset.status);
  };
  new MutationObserver(() => document.querySelectorAll('.stage').forEach(record))
    .observe(document.body, { subtree: true, childList: true, attributes: true });
}
"""


def choose_zone_and_type(page: Page, zone: str = "use1-az1") -> None:
    zone_select = page.get_by_label("Availability Zone")
    expect(zone_select.locator(f"option[value='{zone}']")).to_be_attached()
    zone_select.select_option(zone)
    # the types are read live from EC2 (every type of the zone): seconds on a busy machine
    expect(
        page.get_by_label("Instance type").locator("option[value='ml.g5.8xlarge']")
    ).to_be_attached(timeout=30_000)
    page.get_by_label("Instance type").select_option("ml.g5.8xlarge")
    expect(page.locator(".quota")).to_contain_text("available")


def test_create_cluster_watch_stages_complete_live(page: Page, module_stack: RunningStack) -> None:
    name = unique("ui")
    page.goto("/#/clusters/new")
    page.get_by_label("Cluster name").fill(name)
    choose_zone_and_type(page)
    stream_requests: list[str] = []

    def on_request(request: Request) -> None:
        if "/events/stream" in request.url:
            stream_requests.append(request.url)

    page.on("request", on_request)
    page.evaluate(WATCH_STAGES)
    page.get_by_role("button", name="Create cluster").click()

    panel = page.locator("section.progress")
    expect(panel).to_be_visible()
    # focus moves to the panel's heading
    expect(page.locator("section.progress h2")).to_be_focused()
    expect(panel.locator(".op-summary .status-succeeded")).to_be_visible(timeout=150_000)

    rows = panel.locator(".stage")
    assert rows.count() >= 10
    statuses = rows.evaluate_all("rows => rows.map(r => r.dataset.status)")
    assert set(statuses) <= {"succeeded", "noop"}, statuses
    seen: dict[str, list[str]] = page.evaluate("window.__stages")
    # the rows changed in place while the operation ran: running first, then succeeded
    went_live = [s for s, history in seen.items() if history[-2:] == ["running", "succeeded"]]
    assert len(went_live) >= 5, seen
    assert any("operation_id=" in url for url in stream_requests), stream_requests
    assert page.get_by_role("link", name=f"Open {name}").is_visible()

    op = module_stack.client.get("/api/v1/clusters").json()
    assert any(c["name"] == name and c["status"] == "active" for c in op)
    # the mutation is recorded as made from the UI
    audit = module_stack.client.get("/api/v1/audit", params={"limit": 1000}).json()
    assert any(
        a["type"] == "OperationAccepted"
        and a["payload"].get("target_id") == name
        and a["source"] == "ui"
        for a in audit
    )


def test_validation_errors_shown_at_their_fields(page: Page) -> None:
    page.goto("/#/clusters/new")
    choose_zone_and_type(page)
    name = page.get_by_label("Cluster name")
    name.fill("-not-a-name")
    page.get_by_role("button", name="Create cluster").click()
    error = page.locator(f"#{name.get_attribute('id')}-error")
    # in words, not the regular expression
    expect(error).to_contain_text(
        "is not in the form this field takes — use 1 to 63 letters, digits and hyphens,"
        " starting and ending with a letter or digit"
    )
    expect(name).to_have_attribute("aria-invalid", "true")
    expect(name).to_be_focused()

    # instance_groups[0].instance_type-style: a type the (stale) zone does not offer
    name.fill(unique("ui"))
    page.get_by_label("Availability Zone").evaluate("el => { el.value = 'use1-az3'; }")
    page.get_by_role("button", name="Create cluster").click()
    instance_type = page.get_by_label("Instance type")
    type_error = page.locator(f"#{instance_type.get_attribute('id')}-error")
    expect(type_error).to_contain_text("is not offered in use1-az3")
    expect(type_error).to_contain_text("set availability_zone_id")
    expect(instance_type).to_have_attribute("aria-invalid", "true")
    expect(name).not_to_have_attribute("aria-invalid", "true")

    # instance_groups.0.count-style
    page.get_by_label("Availability Zone").select_option("use1-az1")
    expect(
        page.get_by_label("Instance type").locator("option[value='ml.g5.8xlarge']")
    ).to_be_attached()
    count = page.get_by_label("Instance count")
    count.fill("-1")
    page.get_by_role("button", name="Create cluster").click()
    expect(page.locator(f"#{count.get_attribute('id')}-error")).to_contain_text(
        "greater than or equal to 0"
    )
    expect(page.locator("section.progress")).to_have_count(0)


def test_feature_toggle_submits_only_the_changed_field(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, name = created_cluster
    page.goto(f"/#/clusters/{name}")
    toggle = page.get_by_role("switch", name="Tiered checkpointing")
    expect(toggle).not_to_be_checked()
    apply = page.get_by_role("button", name="Apply changes")
    expect(apply).to_be_disabled()

    sent: list[Request] = []

    def on_request(request: Request) -> None:
        if request.method == "PATCH":
            sent.append(request)

    page.on("request", on_request)
    toggle.check()
    # the plan of the change, from the API's dry run, before Apply is offered
    plan = page.get_by_role("list", name="Plan of the change")
    expect(plan).to_contain_text("Tiered checkpointing: off -> on")
    expect(apply).to_be_enabled()
    assert [r.url.endswith("features?dry_run=true") for r in sent] == [True]
    apply.click()

    expect(page.locator(".result h3")).to_have_text("Submitted", timeout=30_000)
    assert len(sent) == 2
    request = sent[1]
    assert request.url.endswith(f"/api/v1/clusters/{name}/features")
    body: Any = json.loads(request.post_data or "null")
    assert body == {"tiered_checkpointing": {"enabled": True}}
    assert request.headers["x-hyperpilot-source"] == "ui"
    diff = page.get_by_role("list", name="Diff")
    expect(diff).to_contain_text("Tiered checkpointing: off -> on")
    link = page.get_by_role("link", name="Follow the operation")
    operation_id = (link.get_attribute("href") or "").rsplit("/", 1)[-1]
    assert stack.client.get(f"/api/v1/operations/{operation_id}").json()["request"] == body
    done = stack.client.wait(operation_id, timeout=120)
    assert done["status"] == "succeeded", done.get("error")

    # the operation's page shows it finished
    link.click()
    expect(page.locator(".op-summary .status-succeeded")).to_be_visible()


def test_create_form_by_keyboard(page: Page) -> None:
    page.goto("/#/clusters/new")
    name = page.get_by_label("Cluster name")
    expect(name).to_be_focused()
    expect(
        page.get_by_label("Availability Zone").locator("option[value='use1-az1']")
    ).to_be_attached()
    page.keyboard.type("-bad")
    order = []
    for _ in range(8):
        page.keyboard.press("Tab")
        order.append(page.evaluate("(e => e.name || e.textContent.trim())(document.activeElement)"))
    assert order == [
        "region",
        "availability_zone_id",
        "instance_type",
        "instance_type_kind",
        "count",
        "capacity_type",
        "Advanced (defaults work for most clusters)",
        "Create cluster",
    ]
    # the advanced section opens from the keyboard
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_label("Kubernetes version")).to_be_visible()
    # Enter in a text field submits; the error lands on the field and takes focus
    name.focus()
    started = time.monotonic()
    page.keyboard.press("Enter")
    expect(page.locator(f"#{name.get_attribute('id')}-error")).to_be_visible()
    expect(name).to_be_focused()
    assert time.monotonic() - started < 10


def test_submit_a_job_and_watch_its_logs_stream(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    job = unique("job")
    page.goto(f"/#/clusters/{cluster}/jobs")
    page.get_by_label("Job name").fill(job)
    page.get_by_label("Restart budget (job retries)").fill("2")
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    page.get_by_role("button", name="Submit job").click()
    page.get_by_role("link", name="job and logs").click()

    expect(page.locator(".budget")).to_have_text("0 used of 2")
    logs = page.get_by_label("Log lines")
    expect(logs).to_contain_text("step 1/", timeout=60_000)
    first = len(logs.inner_text())
    # more lines arrive while the page is open (following, not one download)
    page.wait_for_function(
        "n => document.querySelector('pre.logs').textContent.length > n", arg=first
    )
    assert any("/logs/ws?" in url and "pod=" in url for url in sockets), sockets
    # search filters the lines shown
    page.get_by_label("Search").fill("step 1/")
    expect(logs).to_contain_text("step 1/")
    expect(logs).not_to_contain_text("world size ready")
    page.get_by_label("Search").fill("")
    # pause holds new lines back until resumed
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_role("button", name="Resume")).to_have_attribute("aria-pressed", "true")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download").click()
    assert "step 1/" in Path(download.value.path()).read_text()
    page.get_by_role("button", name="Resume").click()

    deleted = stack.client.delete(f"/api/v1/clusters/{cluster}/jobs/{job}")
    assert stack.client.wait(deleted.json()["operation_id"])["status"] == "succeeded"


def test_deploy_an_endpoint_and_invoke_it(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    name = unique("ep")
    page.goto("/#/endpoints")
    page.get_by_label("Cluster", exact=True).select_option(cluster)
    page.get_by_label("Endpoint name").fill(name)
    page.get_by_role("button", name="Deploy").click()
    page.locator("#main").get_by_role("link", name="endpoint", exact=True).click()

    expect(page.locator(".summary .status-available")).to_be_visible(timeout=60_000)
    page.get_by_label("Prompt").fill("Say hello")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("pre.answer")).to_contain_text("Say hello")

    deleted = stack.client.delete(f"/api/v1/endpoints/{name}", params={"cluster": cluster})
    assert stack.client.wait(deleted.json()["operation_id"])["status"] == "succeeded"


def test_failed_stage_shown_with_its_error_and_retried_from_its_row(
    page: Page, module_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    from sim.testing import inject_fault

    name = unique("uiretry")
    page.goto("/#/clusters/new")
    page.get_by_label("Cluster name").fill(name)
    choose_zone_and_type(page)
    with inject_fault(sim_aws, "insufficient_capacity", instance_type="ml.g5.8xlarge", times=None):
        page.get_by_role("button", name="Create cluster").click()
        failed = page.locator(".stage[data-stage='hyperpod_cluster'][data-status='failed']")
        expect(failed).to_be_visible(timeout=150_000)
        expect(page.locator(".op-summary .status-failed")).to_be_visible(timeout=60_000)
    expect(failed.locator(".stage-message")).to_contain_text("InsufficientInstanceCapacity")
    expect(page.locator(".stage[data-stage='eks_cluster']")).to_have_attribute(
        "data-status", "succeeded"
    )
    expect(page.get_by_role("button", name="Cancel operation")).to_have_count(0)

    failed.get_by_role("button", name="Retry stage").click()
    row = page.locator(".stage[data-stage='hyperpod_cluster']")
    expect(row).to_have_attribute("data-status", "succeeded", timeout=150_000)
    expect(page.locator(".op-summary .status-succeeded")).to_be_visible(timeout=60_000)
    op = module_stack.client.get("/api/v1/operations").json()["items"]
    mine = next(o for o in op if o["target_id"] == name and o["kind"] == "cluster.create")
    attempts = {
        s["name"]: s["attempts"]
        for s in module_stack.client.get(f"/api/v1/operations/{mine['id']}").json()["stages"]
    }
    assert attempts["hyperpod_cluster"] == 2 and attempts["eks_cluster"] == 1, attempts


def test_diagnostics_show_a_crashed_pod_its_warning_and_its_logs(
    page: Page, created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    """A container killed for memory and restarted by the kubelet: the Diagnostics page shows
    the pod's restart and last termination, the Warning event about it, its log and the log of
    the container before the restart; a bad parameter is shown at its field."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    from sim.k8s import KubeWorld

    stack, cluster = created_cluster
    api = stack.client
    kube = sim_aws.ctx.kube
    assert isinstance(kube, KubeWorld)
    server = kube.api_server(cluster)
    core = k8s.CoreV1Api(k8s_config.new_client_from_config_dict(server.kubeconfig()))
    ns = unique("uidiag")
    base = f"/api/v1/clusters/{cluster}"
    logs = f"{base}/pods/{ns}/crasher/logs"

    def until(check: Any, timeout: float = 20) -> Any:
        deadline = time.monotonic() + timeout
        while not (found := check()):
            assert time.monotonic() < deadline, "not reached in time"
            time.sleep(0.2)
        return found

    def restarted() -> bool:
        pods = api.get(f"{base}/pods", params={"namespace": ns}).json()["pods"]
        return bool(pods) and pods[0]["restarts"] == 1 and pods[0]["status"] == "Running"

    core.create_namespace({"metadata": {"name": ns}})
    try:
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {
                    "name": "crasher",
                    "annotations": {"sim.hyperpilot.dev/steps": "100000"},
                },
                "spec": {
                    "containers": [
                        {"name": "main", "image": "pytorch:2", "command": ["python", "train.py"]}
                    ]
                },
            },
        )
        until(lambda: "step 2/" in api.get(logs).text)
        # killed for memory (137, OOMKilled); the kubelet restarts the container in place
        server.run_on_loop(server.kubelet.crash, ns, "crasher", None, 137, "OOMKilled")
        until(restarted)

        page.goto(f"/#/clusters/{cluster}")
        page.get_by_role("link", name="Diagnostics").click()
        expect(page.get_by_role("heading", name=f"Diagnostics of {cluster}")).to_be_visible()
        pods = page.get_by_role("region", name="Pods")
        expect(pods.get_by_label("Namespace")).to_have_value("default")
        pods.get_by_label("Namespace").fill(ns)
        pods.get_by_label("Namespace").press("Enter")
        row = pods.locator("tr[data-pod='crasher']")
        expect(row.locator(".restarts")).to_have_text("1")
        expect(row.locator(".restarts")).to_have_class("restarts warn-text")
        expect(row.locator(".pod-status")).to_contain_text("Running")
        expect(row.locator(".last-termination")).to_contain_text("OOMKilled (exit 137)")

        events = page.get_by_role("region", name="Kubernetes events")
        events.get_by_label("Namespace").fill(ns)
        events.get_by_label("Warning only").check()  # reads again on change
        warning = events.locator("tr.warn[data-object='crasher']")
        expect(warning).to_contain_text("BackOff")
        expect(warning).to_contain_text("exited with code 137")
        expect(events.locator("tbody tr:not(.warn)")).to_have_count(0)

        row.get_by_role("button", name="Log of crasher").click()
        expect(page.get_by_role("heading", name=f"Log of {ns}/crasher")).to_be_focused()
        log = page.get_by_label("Pod log lines")
        expect(log).to_contain_text("step 1/")
        expect(page.locator(".log-meta")).to_contain_text("main, the current container")
        expect(page.locator(".log-meta")).to_contain_text("1 restart.")

        page.get_by_label("Previous container").check()
        expect(log).to_have_attribute("data-previous", "true")
        expect(page.locator(".log-meta")).to_contain_text("the previous container")
        before = api.get(logs, params={"previous": "true"}).text.strip().splitlines()
        expect(log).to_contain_text(before[-1])

        # a bad parameter: the API's message and hint at its field
        tail = page.get_by_label("Last lines")
        tail.fill("0")
        page.get_by_role("button", name="Refresh log").click()
        expect(tail).to_have_attribute("aria-invalid", "true")
        expect(page.locator(f"#{tail.get_attribute('id')}-error")).to_contain_text(
            "greater than or equal to 1"
        )
    finally:
        core.delete_namespaced_pod("crasher", ns, grace_period_seconds=0)
        core.delete_namespace(ns)


def test_the_pods_asked_for_stay_when_the_first_read_answers_last(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    """The page reads namespace default as it opens; an operator asks for kube-system before
    that answer arrives. The late answer to the first read must not replace the one asked for
    (under load it did, and kube-system's pods vanished from the table)."""
    _, cluster = created_cluster
    held: list[Any] = []

    def hold_the_first(route: Any) -> None:
        if "namespace=default" in route.request.url and not held:
            held.append(route)
        else:
            route.continue_()

    page.route(f"**/api/v1/clusters/{cluster}/pods?*", hold_the_first)
    page.goto(f"/#/clusters/{cluster}/diagnostics")
    pods = page.get_by_role("region", name="Pods")
    pods.get_by_label("Namespace").fill("kube-system")
    pods.get_by_role("button", name="Show pods").click()
    coredns = pods.locator("tr[data-pod^='coredns-']").first
    expect(coredns).to_be_visible()
    assert len(held) == 1, "the page's first read was not held"
    with page.expect_response(lambda r: "namespace=default" in r.url):
        held[0].continue_()
    page.wait_for_timeout(300)  # the late answer's handler has run
    expect(coredns).to_be_visible()
    expect(pods).not_to_contain_text("No pods in namespace default")
