"""The forms for what the API gained, each performed end to end in Debian's Chromium against the
real stack on the simulated AWS: managed autoscaling with its Karpenter settings, its node pools
edited as a list, and dry-run plan (whose stage now finishes: the simulated HyperPod serves managed Karpenter once AutoScaling is
InService), shell and MS-Swift GRPO training jobs with typed hyperparameters and placement, an
endpoint with fallback instance types and KEDA's queue, request-rate and GPU triggers, a managed
endpoint with TLS/DNS, data capture and disaggregated prefill/decode, and a capacity failure
retried in a zone the error names."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from tests.e2e.conftest import RunningStack, unique

# Each form used end to end in Chromium on a built cluster, minutes: in `make reliability`.
pytestmark = pytest.mark.slow

# what waits on an API answer: seconds on a machine that runs other stacks too
API_MS = 30_000
ACM_ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-0000-4000-8000-0123456789ab"


def _objects(sim: SimulatedAws, cluster: str, api_version: str, kind: str) -> list[dict[str, Any]]:
    kube = sim.ctx.kube
    assert isinstance(kube, KubeWorld)
    return kube.api_server(cluster).list_objects(api_version, kind, "default")


def _stage(api: Any, operation_id: str, name: str) -> dict[str, Any]:
    op = api.get(f"/api/v1/operations/{operation_id}").json()
    return dict(next(s for s in op["stages"] if s["name"] == name))


def test_autoscaling_shows_karpenter_settings_and_plan_then_finishes(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    page.goto(f"/#/clusters/{cluster}")
    switch = page.get_by_role("switch", name="Managed autoscaling")
    expect(switch).not_to_be_checked()
    settings = page.get_by_role("group", name="Karpenter settings")
    expect(settings).to_contain_text("AutoScalerType Karpenter", timeout=API_MS)
    expect(settings).to_contain_text("Instance groups scaledgpu")
    apply = page.get_by_role("button", name="Apply changes")
    expect(apply).to_be_disabled()

    switch.check()
    # the dry run's plan in words, before Apply: the diff, the HyperPod call, Karpenter's objects
    plan = page.get_by_role("list", name="Plan of the change")
    expect(plan).to_contain_text("Managed autoscaling: off -> on", timeout=API_MS)
    expect(plan).to_contain_text(
        "sagemaker UpdateCluster: AutoScaling Mode Enable, AutoScalerType Karpenter"
    )
    expect(plan).to_contain_text("NodeProvisioningMode Continuous")
    expect(plan).to_contain_text("waits until HyperPod serves managed Karpenter")
    expect(apply).to_be_enabled()
    apply.click()
    expect(page.get_by_role("list", name="Diff")).to_contain_text(
        "Managed autoscaling: off -> on", timeout=API_MS
    )
    link = page.get_by_role("link", name="Follow the operation")
    operation_id = (link.get_attribute("href") or "").rsplit("/", 1)[-1]

    # the stage that stayed "submitted" for ever: it finishes once HyperPod's AutoScaling is
    # InService (the simulated HyperPod now serves managed Karpenter's kinds then)
    done = api.wait(operation_id, timeout=180)
    assert done["status"] == "succeeded", json.dumps(done.get("error"))
    assert _stage(api, operation_id, "autoscaling")["status"] == "succeeded"
    state = api.get(f"/api/v1/clusters/{cluster}/features").json()["autoscaling"]
    assert state["enabled"] is True and state["node_class"]["ready"] == "True"
    # the open page follows: enabled, with the node class and pool it made
    expect(page.locator("label", has_text="Managed autoscaling").locator("..")).to_contain_text(
        "enabled", timeout=API_MS
    )
    expect(settings).to_contain_text("HyperpodNodeClasshyperpilot, Ready True")
    expect(settings).to_contain_text("NodePoolshyperpilot")

    # the node pools as a list: the one pool over every group, edited in place
    pools = page.get_by_role("group", name="Karpenter node pools")
    pool = pools.get_by_role("group", name="Node pool 1")
    expect(pool.get_by_label("Name")).to_have_value("hyperpilot")
    expect(pool.get_by_label("gpu", exact=True)).to_be_checked()
    # a pool over no group: refused by the dry run, at the field, in words
    pool.get_by_label("gpu", exact=True).uncheck()
    expect(
        pool.get_by_role("group", name="Instance groups of pool 1").locator("..")
    ).to_contain_text("has 0 items; at least 1 is needed", timeout=API_MS)
    expect(apply).to_be_disabled()
    pool.get_by_label("gpu", exact=True).check()
    pool.get_by_label("Weight (1-100, optional)").fill("10")
    pool.get_by_label("GPU limit (optional)").fill("16")
    expect(plan).to_contain_text(
        "Managed autoscaling, node pools: hyperpilot (groups gpu; consolidates when empty after"
        " 5m) -> hyperpilot (groups gpu; weight 10; at most 16 GPUs; consolidates when empty"
        " after 5m)",
        timeout=API_MS,
    )
    apply.click()
    link = page.get_by_role("link", name="Follow the operation")
    expect(link).not_to_have_attribute("href", f"#/operations/{operation_id}", timeout=API_MS)
    edited = (link.get_attribute("href") or "").rsplit("/", 1)[-1]
    assert api.wait(edited, timeout=180)["status"] == "succeeded"
    state = api.get(f"/api/v1/clusters/{cluster}/features").json()["autoscaling"]
    assert [(p["name"], p["weight"], p["gpu_limit"]) for p in state["node_pools"]] == [
        ("hyperpilot", 10, 16)
    ]
    operation_id = edited

    # turning it off removes Karpenter's objects and the role: asked first, with the plan
    switch.uncheck()
    expect(plan).to_contain_text("Managed autoscaling: on -> off", timeout=API_MS)
    expect(plan).to_contain_text("delete NodePool hyperpilot")
    apply.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Turn off Managed autoscaling", timeout=API_MS)
    expect(dialog.get_by_role("list", name="Plan")).to_contain_text("delete HyperpodNodeClass")
    dialog.get_by_role("button", name="Turn off").click()
    link = page.get_by_role("link", name="Follow the operation")
    expect(link).not_to_have_attribute("href", f"#/operations/{operation_id}", timeout=API_MS)
    off = (link.get_attribute("href") or "").rsplit("/", 1)[-1]
    assert api.wait(off, timeout=180)["status"] == "succeeded"
    state = api.get(f"/api/v1/clusters/{cluster}/features").json()["autoscaling"]
    assert state["enabled"] is False and state["node_class"] is None


def test_shell_and_ms_swift_grpo_jobs_with_typed_fields_and_placement(
    page: Page, created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    jobs = f"/api/v1/clusters/{cluster}/jobs"
    page.goto(f"/#/clusters/{cluster}/jobs")
    form = page.get_by_role("form", name="Submit a job")

    shell = unique("sh")
    form.get_by_label("Job name").fill(shell)
    form.get_by_label("Recipe", exact=True).select_option("shell")
    expect(form.get_by_label("Script (pytorch)")).to_be_hidden()
    script = 'echo "rank $NODE_RANK of $NNODES"\npython3 /s3/code/train.py --max_steps 500'
    form.get_by_label("Bash script").fill(script)
    form.get_by_label("GPUs per replica").fill("0")
    form.get_by_label("Only nodes whose deep health check passed").check()
    form.get_by_role("button", name="Submit job").click()
    expect(page.locator(".notice")).to_contain_text(f"Submitted {shell}", timeout=API_MS)

    grpo = unique("grpo")
    form.get_by_label("Job name").fill(grpo)
    form.get_by_label("Recipe", exact=True).select_option("ms-swift")
    form.get_by_label("Method").select_option("grpo")
    form.get_by_label("Model (path in the bucket)").fill("models/Qwen2.5-0.5B")
    form.get_by_label("Dataset (path in the bucket)").fill("datasets/gsm8k")
    form.get_by_label("cosine").check()
    form.get_by_label("Completions per prompt").fill("4")
    form.get_by_label("Batch size per device").fill("2")
    form.get_by_label("Stop after steps").fill("500")
    form.get_by_label("Learning rate").fill("0.00002")
    form.get_by_label("GPUs per replica").fill("0")
    form.get_by_label("Only nodes whose deep health check passed").uncheck()
    form.get_by_label("Pods under one network node").select_option("network-node-layer-3")
    form.get_by_role("button", name="Submit job").click()
    expect(page.locator(".notice")).to_contain_text(f"Submitted {grpo}", timeout=API_MS)

    def running(name: str) -> dict[str, Any]:
        deadline = time.monotonic() + 120
        while True:
            found = api.get(f"{jobs}/{name}", params={"live": "false"})
            if found.status_code == 200 and found.json()["status"] == "running":
                return dict(found.json())
            assert time.monotonic() < deadline, found.text
            time.sleep(0.5)

    sent = running(shell)["spec"]
    assert sent["recipe"] == "shell" and sent["body"] == script
    assert sent["placement"]["deep_health_check_passed"] is True
    sent = running(grpo)["spec"]
    assert (sent["recipe"], sent["algorithm"], sent["num_generations"]) == ("ms-swift", "grpo", 4)
    assert sent["reward_funcs"] == ["accuracy", "format", "cosine"]
    assert sent["hyperparameters"]["batch_size"] == 2
    assert sent["hyperparameters"]["max_steps"] == 500
    assert sent["learning_rate"] == 0.00002
    assert sent["placement"]["topology"] == "network-node-layer-3"
    assert sent["placement"]["topology_required"] is False

    # rendered as HyperPod's job: the deep-health-check label required, the topology preferred
    rendered = {
        j["metadata"]["name"]: json.dumps(j["spec"])
        for j in _objects(sim_aws, cluster, "sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob")
    }
    assert "sagemaker.amazonaws.com/deep-health-check-status" in rendered[shell]
    assert "topology.k8s.aws/network-node-layer-3" in rendered[grpo]
    assert "preferredDuringSchedulingIgnoredDuringExecution" in rendered[grpo]

    # a typed field refused by the API lands at its field
    form.get_by_label("Job name").fill(unique("bad"))
    form.get_by_label("Completions per prompt").fill("1")
    form.get_by_role("button", name="Submit job").click()
    generations = form.get_by_label("Completions per prompt")
    expect(generations).to_have_attribute("aria-invalid", "true", timeout=API_MS)

    for name in (shell, grpo):
        deleted = api.delete(f"{jobs}/{name}").json()["operation_id"]
        assert api.wait(deleted, timeout=120)["status"] == "succeeded"


def test_endpoint_with_fallback_types_and_keda_triggers(
    page: Page, created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    # a second instance type on the cluster, for the fallback
    added = api.post(
        f"/api/v1/clusters/{cluster}/instance-groups",
        {"name": "alt", "instance_type": "ml.g5.xlarge", "count": 1},
    )
    assert added.status_code == 202, added.text
    assert api.wait(added.json()["operation_id"], timeout=240)["status"] == "succeeded"

    name = unique("kd")
    page.goto("/#/endpoints")
    page.get_by_label("Cluster", exact=True).select_option(cluster)
    form = page.get_by_role("form", name="Deploy an endpoint")
    form.get_by_label("Endpoint name").fill(name)
    expect(form.get_by_label("Instance type", exact=True)).to_have_value(
        "ml.g5.8xlarge", timeout=30_000
    )
    # a fallback the cluster has no node of: refused at the field
    fallbacks = form.get_by_label("Fallbacks, by preference")
    fallbacks.fill("ml.p5.48xlarge")
    form.get_by_role("button", name="Deploy").click()
    expect(fallbacks).to_have_attribute("aria-invalid", "true", timeout=API_MS)
    expect(page.locator(f"#{fallbacks.get_attribute('id')}-error")).to_contain_text(
        "not an instance type of cluster"
    )
    fallbacks.fill("ml.g5.xlarge")
    form.get_by_label("Scale with load").check()
    form.get_by_label("Maximum replicas").fill("2")
    form.get_by_label("Queued requests per replica").fill("3")
    form.get_by_label("Requests per second per replica").fill("0.5")
    form.get_by_label("Rate window (seconds)").fill("20")
    form.get_by_label("GPU utilization % per replica").fill("70")
    form.get_by_role("button", name="Deploy").click()
    page.locator("#main").get_by_role("link", name="endpoint", exact=True).click(timeout=API_MS)
    expect(page.locator(".summary .status-available")).to_be_visible(timeout=120_000)

    spec = api.get(f"/api/v1/endpoints/{name}", params={"cluster": cluster}).json()["spec"]
    assert spec["fallback_instance_types"] == ["ml.g5.xlarge"]
    scaling = spec["autoscaling"]
    assert (scaling["max_replicas"], scaling["queue_depth"]) == (2, 3)
    assert (scaling["requests_per_second"], scaling["rate_window_seconds"]) == (0.5, 20)
    assert scaling["gpu_utilization"] == 70
    [scaled] = [
        o
        for o in _objects(sim_aws, cluster, "keda.sh/v1alpha1", "ScaledObject")
        if o["metadata"]["name"] == name
    ]
    triggers = {t["name"]: t["metadata"] for t in scaled["spec"]["triggers"]}
    assert triggers["requests-per-second"]["threshold"] == "0.5"
    assert "[20s]" in triggers["requests-per-second"]["query"]
    assert triggers["queue-depth"]["threshold"] == "3"
    assert any("gpu" in t for t in triggers), triggers
    [deployment] = [
        o
        for o in _objects(sim_aws, cluster, "apps/v1", "Deployment")
        if o["metadata"]["name"] == name
    ]
    assert "ml.g5.xlarge" in json.dumps(deployment["spec"]["template"]["spec"].get("affinity"))

    deleted = api.delete(f"/api/v1/endpoints/{name}", params={"cluster": cluster})
    assert api.wait(deleted.json()["operation_id"], timeout=120)["status"] == "succeeded"


def test_managed_endpoint_with_tls_dns_capture_and_disaggregation(
    page: Page, created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    operator = api.http.patch(
        f"/api/v1/clusters/{cluster}/features", json={"inference_operator": True}
    )
    assert operator.status_code == 202, operator.text
    assert api.wait(operator.json()["operation_id"], timeout=120)["status"] == "succeeded"

    name = unique("mg")
    page.goto("/#/endpoints")
    page.get_by_label("Cluster", exact=True).select_option(cluster)
    form = page.get_by_role("form", name="Deploy an endpoint")
    form.get_by_label("Endpoint name").fill(name)
    form.get_by_label("Kind", exact=True).select_option("managed")
    expect(form.get_by_label("Instance type", exact=True)).to_have_value(
        "ml.g5.8xlarge", timeout=30_000
    )
    form.get_by_label("ACM certificate ARN").fill(ACM_ARN)
    domain = form.get_by_label("Domain name")
    # a wildcard domain is refused at its field
    domain.fill("*.example.com")
    form.get_by_role("button", name="Deploy").click()
    expect(domain).to_have_attribute("aria-invalid", "true", timeout=API_MS)
    domain.fill("chat.example.com")
    form.get_by_label("Route 53 hosted zone id").fill("Z0123456789ABC")
    form.get_by_label("Capture requests and responses").check()
    form.get_by_label("Capture to (S3 URI)").fill("s3://captures/ui")
    form.get_by_label("At the load balancer").check()
    form.get_by_label("Sampled share of requests (%)").fill("50")
    form.get_by_label("Disaggregate prefill and decode").check()
    form.get_by_label("Decode workers").fill("1")
    form.get_by_label("Remote prefill from (prompt tokens)").fill("2048")
    form.get_by_role("button", name="Deploy").click()
    page.locator("#main").get_by_role("link", name="endpoint", exact=True).click(timeout=API_MS)
    expect(page.locator(".summary .status-available")).to_be_visible(timeout=120_000)

    [config] = [
        o
        for o in _objects(
            sim_aws, cluster, "inference.sagemaker.aws.amazon.com/v1", "InferenceEndpointConfig"
        )
        if o["metadata"]["name"] == name
    ]
    spec = config["spec"]
    assert spec["tlsConfig"]["customCertificateConfig"] == {
        "acmArn": ACM_ARN,
        "domainName": "chat.example.com",
    }
    assert spec["dnsConfig"] == {"hostedZoneId": "Z0123456789ABC"}
    capture = spec["dataCapture"]
    assert capture["s3Uri"] == "s3://captures/ui" and capture["loadBalancer"] == {"enabled": True}
    assert capture["modelPod"]["initialSamplingPercentage"] == 50
    roles = spec["pdSpec"]
    assert (roles["prefillSpec"]["replicas"], roles["decodingSpec"]["replicas"]) == (1, 1)
    assert roles["routingThreshold"] == 2048
    assert config["status"]["state"] == "DeploymentComplete"

    deleted = api.delete(f"/api/v1/endpoints/{name}", params={"cluster": cluster})
    assert api.wait(deleted.json()["operation_id"], timeout=120)["status"] == "succeeded"


def test_capacity_failure_retries_in_a_zone_the_error_names(
    page: Page, module_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    from sim.testing import inject_fault

    api = module_stack.client
    name = unique("zr")
    # ml.g5.8xlarge is offered in use1-az1 and in other zones of the simulated region
    short, instance_type = "use1-az1", "ml.g5.8xlarge"
    spec = {
        "name": name,
        "availability_zone_id": short,
        "instance_groups": [{"name": "gpu", "instance_type": instance_type, "count": 1}],
    }
    with inject_fault(
        sim_aws,
        "insufficient_capacity",
        instance_type=instance_type,
        availability_zone_id=short,
        times=None,
    ):
        created = api.post("/api/v1/clusters", spec).json()["operation_id"]
        failed = api.wait(created, timeout=240)
        assert failed["status"] == "failed", failed.get("error")
        error = _stage(api, created, "hyperpod_cluster")["error"]
        assert error["code"] == "InsufficientInstanceCapacity" and short in error["message"]

        page.goto(f"/#/operations/{created}")
        retry = page.get_by_role("group", name="Retry in another zone")
        buttons = retry.get_by_role("button")
        expect(buttons.first).to_be_visible(timeout=API_MS)
        zone = buttons.first.get_attribute("data-zone") or ""
        # the zones are those the error's hint names, never the one that had no capacity
        assert zone and zone != short and zone in error["hint"]
        expect(retry.locator(f"button[data-zone='{short}']")).to_have_count(0)

        buttons.first.click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text(f"Create {name} again in {zone}?", timeout=API_MS)
        plan = dialog.get_by_role("list", name="Plan")
        expect(plan).to_contain_text(f"First the failed cluster {name} is deleted")
        expect(plan).to_contain_text(
            f"created again with the same settings in {zone} (was {short})"
        )
        dialog.get_by_role("button", name=f"Retry in {zone}").click()
        expect(retry).to_contain_text(f"Deleting the failed cluster {name}", timeout=API_MS)

        # the deletion, then the same creation in the other zone; the page follows the new one
        page.wait_for_url(lambda url: created not in url, timeout=240_000)
        expect(page.locator(".op-summary .status-succeeded")).to_be_visible(timeout=300_000)
    again = api.get(f"/api/v1/clusters/{name}").json()
    assert again["spec"]["availability_zone_id"] == zone
    assert again["spec"]["instance_groups"] == [
        {
            **again["spec"]["instance_groups"][0],
            "name": "gpu",
            "instance_type": instance_type,
            "count": 1,
        }
    ]
    gone = api.delete(f"/api/v1/clusters/{name}").json()["operation_id"]
    assert api.wait(gone, timeout=240)["status"] == "succeeded"


def test_the_new_fields_have_no_accessibility_violations(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    """axe-core on the forms with every new field shown, at 1280 and 420 px."""
    from tests.ui.helpers import axe_violations

    _, cluster = created_cluster

    def jobs() -> None:
        page.goto(f"/#/clusters/{cluster}/jobs")
        page.get_by_label("Recipe", exact=True).select_option("ms-swift")
        page.get_by_label("Method").select_option("grpo")

    def shell() -> None:
        page.goto(f"/#/clusters/{cluster}/jobs")
        page.get_by_label("Recipe", exact=True).select_option("shell")

    def endpoint() -> None:
        page.goto("/#/endpoints")
        page.get_by_label("Kind", exact=True).select_option("managed")
        page.get_by_label("Scale with load").check()
        page.get_by_label("Capture requests and responses").check()
        page.get_by_label("Disaggregate prefill and decode").check()

    def features() -> None:
        page.goto(f"/#/clusters/{cluster}")
        page.get_by_role("switch", name="Managed autoscaling").check()
        expect(page.get_by_role("list", name="Plan of the change")).to_be_visible(timeout=API_MS)

    found = {}
    for width in (1280, 420):
        page.set_viewport_size({"width": width, "height": 900})
        for name, show in (
            ("jobs", jobs),
            ("shell", shell),
            ("endpoint", endpoint),
            ("features", features),
        ):
            show()
            page.wait_for_timeout(300)
            violations = axe_violations(page)
            if violations:
                found[f"{width} {name}"] = violations
            # nothing wider than the page at either width
            assert page.evaluate("document.documentElement.scrollWidth") <= width, name
    assert not found, found
