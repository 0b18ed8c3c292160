"""The pages for model downloads, MLflow, software update and training plans, each doing its
action end to end against the simulated AWS, in Debian's Chromium."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from sim.aws import SimulatedAws
from sim.aws.account import ReservedCapacity
from tests.e2e.conftest import RunningStack, unique


def test_training_plans_listed(page: Page, sim_aws: SimulatedAws) -> None:
    name = unique("plan")
    sim_aws.account.add_training_plan(name, [ReservedCapacity("ml.p5.48xlarge", 4, "use1-az2")])
    page.goto("/#/clusters")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Training plans").click()
    row = page.locator(f"tr[data-plan='{name}']")
    expect(row.locator("td[data-label='Status']")).to_contain_text("Active")
    expect(row.locator("td[data-label='Reserved']")).to_have_text(
        "4 \u00d7 ml.p5.48xlarge in use1-az2"
    )
    expect(row.locator("td[data-label='Instances']")).to_contain_text("of 4")


def test_a_model_downloaded_from_hugging_face_to_the_bucket(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    _, cluster = created_cluster
    name = unique("dl")
    page.goto(f"/#/clusters/{cluster}")
    expect(page.get_by_role("link", name="Model downloads")).to_have_attribute(
        "href", f"#/clusters/{cluster}/models"
    )
    page.goto(f"/#/clusters/{cluster}/models")
    form = page.get_by_role("form", name="Download a model")
    expect(page.get_by_role("table", name="Model downloads")).to_be_visible()
    form.get_by_label("Download name").fill(name)
    form.get_by_label("Hugging Face model").fill("Qwen/Qwen2.5-0.5B")
    form.get_by_role("button", name="Download").click()
    # the request's answer (an operation accepted): seconds on a loaded machine
    expect(page.locator("#main .notice")).to_contain_text(
        "Downloading Qwen/Qwen2.5-0.5B", timeout=30_000
    )
    row = page.locator(f"tr[data-download='{name}']")
    expect(row.locator("td[data-label='Model']")).to_have_text("Qwen/Qwen2.5-0.5B")
    expect(row.locator("td[data-label='Status']")).to_contain_text("succeeded", timeout=60_000)

    # a bad model name: the API's sentence at its field
    form.get_by_label("Download name").fill(unique("dl"))
    form.get_by_label("Hugging Face model").fill("not a repo")
    form.get_by_role("button", name="Download").click()
    expect(form.get_by_label("Hugging Face model")).to_have_attribute("aria-invalid", "true")


def test_an_mlflow_tracking_server_created(page: Page) -> None:
    name = unique("exp")
    page.goto("/#/mlflow")
    form = page.get_by_role("form", name="Create a tracking server")
    form.get_by_label("Server name").fill(name)
    form.get_by_label("Artifact store").fill("s3://hyperpilot-mlflow/artifacts")
    form.get_by_label("Role ARN").fill("arn:aws:iam::123456789012:role/mlflow")
    form.get_by_role("button", name="Create server").click()
    row = page.locator(f"tr[data-server='{name}']")
    expect(row.locator("td[data-label='Status']")).to_contain_text("Created", timeout=30_000)
    expect(row.locator("td[data-label='Tracking URI']")).to_contain_text(
        f"mlflow-tracking-server/{name}"
    )


def test_a_software_update_confirmed_with_its_plan(
    page: Page, created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    before = len(sim_aws.call_log("sagemaker", "UpdateClusterSoftware"))
    page.goto(f"/#/clusters/{cluster}")
    page.get_by_role("link", name="Software update").click()
    form = page.get_by_role("form", name="Update the nodes' software")
    expect(form.get_by_label("gpu (2 \u00d7 ml.g5.8xlarge)")).to_be_checked()
    form.get_by_role("button", name="Update software").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("list", name="Plan")).to_contain_text("latest")
    dialog.get_by_role("button", name="Update software").click()
    link = page.locator("#main .notice").get_by_role("link", name="follow the operation")
    operation = (link.get_attribute("href") or "").rsplit("/", 1)[-1]
    done = stack.client.wait(operation, timeout=120)
    assert done["status"] == "succeeded", done.get("error")
    calls = sim_aws.call_log("sagemaker", "UpdateClusterSoftware")
    assert len(calls) == before + 1
    assert calls[-1]["params"]["ClusterName"] == cluster


def test_an_endpoint_with_its_service_scaling_url_and_curl(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    name = unique("svc")
    page.goto("/#/endpoints")
    page.get_by_label("Cluster", exact=True).select_option(cluster)
    form = page.get_by_role("form", name="Deploy an endpoint")
    expect(form.get_by_label("Instance type", exact=True)).to_have_value("ml.g5.8xlarge")
    form.get_by_label("Endpoint name").fill(name)
    form.get_by_label("Kind").select_option("sglang")
    form.get_by_label("Service").select_option("external")
    form.get_by_label("Scale with load").check()
    form.get_by_label("Maximum replicas").fill("3")
    form.get_by_role("button", name="Deploy").click()
    page.locator("#main .notice").get_by_role("link", name="endpoint").click()

    expect(page.locator(".ep-service")).to_have_text("External (a load balancer)")
    expect(page.get_by_text("with load: 1\u20133 replicas")).to_be_visible()
    url = f"/api/v1/endpoints/{name}/v1/chat/completions?cluster={cluster}"
    expect(page.locator(".ep-url")).to_contain_text(url)
    curl = page.get_by_label("curl example")
    expect(curl).to_contain_text(f"curl -X POST '{stack.stack.url}{url}'")
    expect(curl).to_contain_text("Authorization: Bearer $HYPERPILOT_TOKEN")
    spec = api.get(f"/api/v1/endpoints/{name}", params={"cluster": cluster}).json()["spec"]
    assert spec["service"] == "external" and spec["autoscaling"]["max_replicas"] == 3

    # its scaling changed through REST: the open page follows (the store, no timer of its own)
    changed = api.http.patch(
        f"/api/v1/endpoints/{name}",
        params={"cluster": cluster},
        json={"autoscaling": {"min_replicas": 1, "max_replicas": 2}},
    )
    assert changed.status_code == 202, changed.text
    # the bound counts from the request: it holds the operation's apply to the cluster too,
    # which on a loaded machine takes seconds (the store's own delay is test_day2's)
    expect(page.get_by_text("with load: 1\u20132 replicas")).to_be_visible(timeout=10_000)

    # replicas of an autoscaled endpoint: the API's sentence at the box
    box = page.get_by_label(f"Replicas of {name}")
    box.fill("5")
    page.get_by_role("button", name="Scale", exact=True).click()
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_role("form", name="Scale and expose")).to_contain_text("KEDA scales")

    # an external endpoint waits for its load balancer: deleted without waiting for that
    deleted = api.delete(f"/api/v1/endpoints/{name}", params={"cluster": cluster})
    assert deleted.status_code == 202, deleted.text
