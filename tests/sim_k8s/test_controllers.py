"""Simulated controllers: workloads, scheduling on HyperPod nodes, kubelet, services, faults."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from sim.interfaces import SimNode
from sim.k8s import ApiServer, KubeWorld
from tests.sim_k8s.conftest import deployment, eventually


def gpu_node(
    n: int, group: str = "gpu", itype: str = "ml.p5.48xlarge", status: str = "Running"
) -> SimNode:
    return SimNode(f"i-0{n:016x}", group, itype, status, "us-east-1a", "hp-cluster")


def pod(name: str, image: str = "nginx:1.27", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": image}], **spec},
    }
    return body


def phase(core: client.CoreV1Api, name: str, ns: str = "default") -> str:
    return str(core.read_namespaced_pod(name, ns).status.phase)


def test_deployment_becomes_available_and_scales(
    apps: client.AppsV1Api, core: client.CoreV1Api
) -> None:
    apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    dep = eventually(
        lambda: (
            (d := apps.read_namespaced_deployment("web", "default")).status.available_replicas == 2
            and d
        )
    )
    assert any(c.type == "Available" and c.status == "True" for c in dep.status.conditions)
    rs = apps.list_namespaced_replica_set("default", label_selector="app=web").items
    assert len(rs) == 1 and rs[0].metadata.owner_references[0].kind == "Deployment"
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 4}})
    eventually(lambda: apps.read_namespaced_deployment("web", "default").status.ready_replicas == 4)
    # a new template rolls out a new ReplicaSet and retires the old one
    apps.patch_namespaced_deployment(
        "web",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.28"}]}}}},
    )

    def rolled() -> bool:
        pods = core.list_namespaced_pod("default", label_selector="app=web").items
        live = [p for p in pods if p.status.phase == "Running"]
        return len(live) == 4 and all(p.spec.containers[0].image == "nginx:1.28" for p in live)

    eventually(rolled)
    eventually(
        lambda: apps.read_namespaced_deployment("web", "default").status.updated_replicas == 4
    )


def test_statefulset_and_job(
    apps: client.AppsV1Api, api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    sts = deployment("db", replicas=2)
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "db"
    apps.create_namespaced_stateful_set("default", sts)
    eventually(
        lambda: apps.read_namespaced_stateful_set("db", "default").status.ready_replicas == 2
    )
    assert {
        p.metadata.name for p in core.list_namespaced_pod("default", label_selector="app=db").items
    } == {"db-0", "db-1"}
    batch = client.BatchV1Api(api_client)
    job = {
        "metadata": {"name": "ok"},
        "spec": {
            "completions": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox:1", "command": ["sh", "-c", "echo hi"]}
                    ],
                }
            },
        },
    }
    batch.create_namespaced_job("default", job)
    done = eventually(
        lambda: (j := batch.read_namespaced_job("ok", "default")).status.succeeded == 2 and j
    )
    assert any(c.type == "Complete" and c.status == "True" for c in done.status.conditions)
    failing = {
        "metadata": {"name": "bad"},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "c",
                            "image": "busybox:1",
                            "command": ["sh", "-c", "echo boom; exit 2"],
                        }
                    ],
                }
            },
        },
    }
    batch.create_namespaced_job("default", failing)
    failed = eventually(
        lambda: (j := batch.read_namespaced_job("bad", "default")).status.conditions and j
    )
    assert failed.status.failed == 2
    assert [(c.type, c.reason) for c in failed.status.conditions if c.type == "Failed"] == [
        ("Failed", "BackoffLimitExceeded")
    ]


def test_services_get_cluster_ips_and_endpoints(
    core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    apps.create_namespaced_deployment("default", deployment("api", replicas=1))
    svc = core.create_namespaced_service(
        "default",
        {
            "metadata": {"name": "api"},
            "spec": {"selector": {"app": "api"}, "ports": [{"port": 80}]},
        },
    )
    assert svc.spec.cluster_ip.startswith("172.20.") and svc.spec.ports[0].target_port == 80
    ep = eventually(lambda: (e := core.read_namespaced_endpoints("api", "default")).subsets and e)
    assert len(ep.subsets[0].addresses) == 1
    lb = core.create_namespaced_service(
        "default",
        {
            "metadata": {"name": "pub"},
            "spec": {"type": "LoadBalancer", "selector": {"app": "api"}, "ports": [{"port": 80}]},
        },
    )
    assert lb.status.load_balancer.ingress is None and lb.spec.ports[0].node_port >= 30000
    ingress = eventually(
        lambda: core.read_namespaced_service("pub", "default").status.load_balancer.ingress
    )
    assert ingress[0].hostname.endswith(".elb.us-east-1.amazonaws.com")


def test_gpu_pods_schedule_on_fitting_hyperpod_nodes(
    cluster: ApiServer, core: client.CoreV1Api
) -> None:
    cluster.sync_nodes([gpu_node(1), gpu_node(2, group="small", itype="ml.g5.xlarge")])
    node = core.read_node("hyperpod-i-00000000000000001")
    labels = node.metadata.labels
    assert labels["sagemaker.amazonaws.com/instance-group-name"] == "gpu"
    assert labels["node.kubernetes.io/instance-type"] == "ml.p5.48xlarge"
    assert labels["sagemaker.amazonaws.com/node-health-status"] == "Schedulable"
    assert (
        node.status.allocatable["nvidia.com/gpu"] == "8"
        and node.status.allocatable["vpc.amazonaws.com/efa"] == "32"
    )
    resources = {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}
    trainer = pod(
        "trainer",
        image="pytorch:2",
        nodeSelector={"sagemaker.amazonaws.com/instance-group-name": "gpu"},
    )
    trainer["spec"]["containers"][0]["resources"] = resources
    core.create_namespaced_pod("default", trainer)
    eventually(lambda: phase(core, "trainer") == "Running")
    assert (
        core.read_namespaced_pod("trainer", "default").spec.node_name
        == "hyperpod-i-00000000000000001"
    )
    # the p5 is full and the g5 has one GPU: a second 8-GPU pod stays Pending, with the reason
    second = pod("second", image="pytorch:2")
    second["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
    core.create_namespaced_pod("default", second)

    def unschedulable() -> str:
        conds = core.read_namespaced_pod("second", "default").status.conditions or []
        return next(
            (c.message for c in conds if c.type == "PodScheduled" and c.reason == "Unschedulable"),
            "",
        )

    message = eventually(unschedulable)
    assert "Insufficient nvidia.com/gpu" in message and message.startswith(
        "0/4 nodes are available"
    )
    events = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=second"
    ).items
    assert any(e.reason == "FailedScheduling" for e in events)
    # more capacity arrives: the pending pod is scheduled
    cluster.sync_nodes([gpu_node(1), gpu_node(2, group="small", itype="ml.g5.xlarge"), gpu_node(3)])
    eventually(lambda: phase(core, "second") == "Running")
    assert (
        core.read_namespaced_pod("second", "default").spec.node_name
        == "hyperpod-i-00000000000000003"
    )


def test_node_faults_and_replacement(
    cluster: ApiServer, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    cluster.sync_nodes([gpu_node(7, group="ft"), gpu_node(8, group="ft")])
    dep = deployment(
        "svc-ft", replicas=1, nodeSelector={"sagemaker.amazonaws.com/instance-group-name": "ft"}
    )
    apps.create_namespaced_deployment("default", dep)
    first = eventually(
        lambda: [
            p
            for p in core.list_namespaced_pod("default", label_selector="app=svc-ft").items
            if p.status.phase == "Running"
        ]
    )
    node = first[0].spec.node_name
    cluster.faults.node_not_ready(node)
    assert any(t.key == "node.kubernetes.io/not-ready" for t in core.read_node(node).spec.taints)

    def moved() -> bool:
        pods = core.list_namespaced_pod("default", label_selector="app=svc-ft").items
        return any(p.status.phase == "Running" and p.spec.node_name != node for p in pods)

    eventually(moved)
    cluster.faults.node_ready(node)
    # HyperPod marks a failed instance for replacement, then replaces it
    failing = gpu_node(7, group="ft", status="Failure")
    cluster.sync_nodes([failing, gpu_node(8, group="ft")])
    bad = core.read_node("hyperpod-i-00000000000000007")
    assert (
        bad.metadata.labels["sagemaker.amazonaws.com/node-health-status"]
        == "UnschedulablePendingReplacement"
    )
    assert any(t.key == "sagemaker.amazonaws.com/node-health-status" for t in bad.spec.taints)
    cluster.sync_nodes([gpu_node(9, group="ft"), gpu_node(8, group="ft")])
    names = {
        n.metadata.name
        for n in core.list_node(
            label_selector="sagemaker.amazonaws.com/instance-group-name=ft"
        ).items
    }
    assert names == {"hyperpod-i-00000000000000009", "hyperpod-i-00000000000000008"}
    # a reboot: the instance goes Pending and comes back; its node stays, NotReady meanwhile
    cluster.sync_nodes([gpu_node(9, group="ft"), gpu_node(8, group="ft", status="Pending")])
    rebooting = core.read_node("hyperpod-i-00000000000000008")
    ready = next(c for c in rebooting.status.conditions if c.type == "Ready")
    assert ready.status == "Unknown"
    assert (
        rebooting.metadata.labels["sagemaker.amazonaws.com/node-health-status"]
        == "UnschedulablePendingReboot"
    )
    cluster.sync_nodes([gpu_node(9, group="ft"), gpu_node(8, group="ft")])
    back = core.read_node("hyperpod-i-00000000000000008")
    assert next(c for c in back.status.conditions if c.type == "Ready").status == "True"
    assert not any(t.key.startswith("node.kubernetes.io/") for t in back.spec.taints or [])


def test_pod_crash_restarts_and_logs(cluster: ApiServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("crashy", image="nginx:1.27"))
    eventually(lambda: phase(core, "crashy") == "Running")
    cluster.faults.crash_pod("default", "crashy", exit_code=137)

    def restarted() -> bool:
        cs = core.read_namespaced_pod("crashy", "default").status.container_statuses[0]
        return cs.restart_count == 1 and cs.ready and cs.last_state.terminated.exit_code == 137

    eventually(restarted)
    assert "started" in core.read_namespaced_pod_log("crashy", "default", previous=True)
    two = pod("two", image="busybox:1", restartPolicy="Never")
    two["spec"]["containers"] = [
        {"name": "a", "image": "busybox:1", "command": ["sh", "-c", "echo from-a"]},
        {"name": "b", "image": "busybox:1", "command": ["sh", "-c", "echo from-b; exit 3"]},
    ]
    core.create_namespaced_pod("default", two)
    eventually(lambda: phase(core, "two") == "Failed")
    assert core.read_namespaced_pod_log("two", "default", container="b") == "from-b\n"
    assert core.read_namespaced_pod_log("two", "default", container="a", timestamps=True).endswith(
        " from-a\n"
    )


def test_slow_image_pull_and_csi_volumes(cluster: ApiServer, core: client.CoreV1Api) -> None:
    cluster.faults.slow_image_pull("huge/*", 3.0)
    core.create_namespaced_pod("default", pod("slow", image="huge/model:1"))
    eventually(lambda: core.read_namespaced_pod("slow", "default").status.container_statuses)
    assert (
        core.read_namespaced_pod("slow", "default")
        .status.container_statuses[0]
        .state.waiting.reason
        == "ContainerCreating"
    )
    eventually(lambda: phase(core, "slow") == "Running", timeout=15)
    # a static S3 volume binds, but pods mount it only once the Mountpoint CSI driver is installed
    core.create_persistent_volume(
        {
            "metadata": {"name": "s3-pv"},
            "spec": {
                "capacity": {"storage": "1200Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "csi": {
                    "driver": "s3.csi.aws.com",
                    "volumeHandle": "s3-csi-driver-volume",
                    "volumeAttributes": {"bucketName": "data"},
                },
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": "s3-claim"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": "s3-pv",
                "resources": {"requests": {"storage": "1200Gi"}},
            },
        },
    )
    eventually(
        lambda: (
            core.read_namespaced_persistent_volume_claim("s3-claim", "default").status.phase
            == "Bound"
        )
    )
    reader = pod(
        "reader", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "s3-claim"}}]
    )
    core.create_namespaced_pod("default", reader)
    eventually(
        lambda: any(
            e.reason == "FailedMount"
            for e in core.list_namespaced_event(
                "default", field_selector="involvedObject.name=reader"
            ).items
        )
    )
    assert phase(core, "reader") == "Pending"
    cluster.install("aws-mountpoint-s3-csi-driver")
    eventually(lambda: phase(core, "reader") == "Running")


def test_irsa_injects_role_environment(core: client.CoreV1Api) -> None:
    role = "arn:aws:iam::000000000000:role/s3-reader"
    core.create_namespaced_service_account(
        "default",
        {"metadata": {"name": "reader", "annotations": {"eks.amazonaws.com/role-arn": role}}},
    )
    made = core.create_namespaced_pod("default", pod("irsa", serviceAccountName="reader"))
    env = {e.name: e.value for e in made.spec.containers[0].env}
    assert env["AWS_ROLE_ARN"] == role
    assert env["AWS_WEB_IDENTITY_TOKEN_FILE"].endswith("/token")
    assert any(v.name == "aws-iam-token" for v in made.spec.volumes)
    plain = core.create_namespaced_pod("default", pod("plain"))
    assert not plain.spec.containers[0].env


def test_daemonset_runs_one_pod_per_eligible_node(
    cluster: ApiServer, apps: client.AppsV1Api, core: client.CoreV1Api
) -> None:
    ds = deployment("agent")
    ds["kind"] = "DaemonSet"
    del ds["spec"]["replicas"]
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"eks.amazonaws.com/nodegroup": "system"}
    apps.create_namespaced_daemon_set("default", ds)
    got = eventually(
        lambda: (
            (d := apps.read_namespaced_daemon_set("agent", "default")).status.number_ready == 2
            and d
        )
    )
    assert got.status.desired_number_scheduled == 2
    nodes = {
        p.spec.node_name
        for p in core.list_namespaced_pod("default", label_selector="app=agent").items
    }
    assert len(nodes) == 2 and all(n.startswith("ip-192-168-") for n in nodes)


def test_dynamic_provisioning_needs_the_csi_driver(
    cluster: ApiServer, core: client.CoreV1Api, api_client: client.ApiClient
) -> None:
    client.StorageV1Api(api_client).create_storage_class(
        {
            "metadata": {"name": "fsx-sc"},
            "provisioner": "fsx.csi.aws.com",
            "parameters": {"deploymentType": "PERSISTENT_2"},
        }
    )
    core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": "fsx-claim"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "fsx-sc",
                "resources": {"requests": {"storage": "1200Gi"}},
            },
        },
    )
    pvc = core.read_namespaced_persistent_volume_claim("fsx-claim", "default")
    assert pvc.status.phase == "Pending"
    cluster.install("aws-fsx-csi-driver")
    bound = eventually(
        lambda: (
            (c := core.read_namespaced_persistent_volume_claim("fsx-claim", "default")).status.phase
            == "Bound"
            and c
        )
    )
    pv = core.read_persistent_volume(bound.spec.volume_name)
    assert pv.spec.csi.driver == "fsx.csi.aws.com" and pv.spec.claim_ref.name == "fsx-claim"


def test_log_tail_and_since(cluster: ApiServer, core: client.CoreV1Api) -> None:
    talker = pod("counter", image="busybox:1", restartPolicy="Never")
    talker["spec"]["containers"][0]["command"] = [
        "sh",
        "-c",
        "echo a; echo b; echo c; sleep 1.5; echo d",
    ]
    core.create_namespaced_pod("default", talker)
    eventually(lambda: phase(core, "counter") == "Succeeded")
    assert core.read_namespaced_pod_log("counter", "default", tail_lines=1) == "d\n"
    recent = core.read_namespaced_pod_log("counter", "default", since_seconds=1)
    assert "a\n" not in recent and recent in ("d\n", "")  # a, b, c were written 1.5 s before d
    assert core.read_namespaced_pod_log("counter", "default", since_seconds=3600) == "a\nb\nc\nd\n"


def test_node_health_fault_evicts_and_notifies(
    world: KubeWorld, cluster: ApiServer, core: client.CoreV1Api
) -> None:
    sim = gpu_node(21, group="hf")
    name = f"hyperpod-{sim.instance_id}"
    cluster.sync_nodes([sim])
    heard: list[tuple[str, str, str]] = []
    world_heard: list[tuple[str, str, str]] = []
    cluster.node_fault_listeners.append(lambda *args: heard.append(args))
    world.node_fault_listeners.append(lambda *args: world_heard.append(args))
    victim = pod(
        "victim",
        image="pytorch:2",
        restartPolicy="Never",
        nodeSelector={"sagemaker.amazonaws.com/instance-group-name": "hf"},
    )
    core.create_namespaced_pod("default", victim)
    eventually(lambda: phase(core, "victim") == "Running")
    cluster.faults.node_health(name, "UnschedulablePendingReplacement")
    eventually(lambda: phase(core, "victim") == "Failed")
    node = core.read_node(name)
    assert (
        node.metadata.labels["sagemaker.amazonaws.com/node-health-status"]
        == "UnschedulablePendingReplacement"
    )
    assert heard == [(cluster.cluster, sim.instance_id, "UnschedulablePendingReplacement")]
    assert world_heard == heard


def test_system_namespaces_cannot_be_deleted(core: client.CoreV1Api) -> None:
    from kubernetes.client.rest import ApiException

    try:
        core.delete_namespace("kube-system")
    except ApiException as exc:
        assert exc.status == 403
    else:
        raise AssertionError("kube-system was deleted")


def test_model_download_job_finishes_with_progress_logs(
    api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    batch = client.BatchV1Api(api_client)
    command = [
        "sh",
        "-c",
        "huggingface-cli download Qwen/Qwen3-8B --local-dir /models && aws s3 sync /models s3://models/qwen3-8b",
    ]
    job = {
        "metadata": {"name": "download"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "dl", "image": "python:3.12", "command": command}],
                }
            }
        },
    }
    batch.create_namespaced_job("default", job)
    eventually(lambda: batch.read_namespaced_job("download", "default").status.succeeded == 1)
    pod_name = (
        core.list_namespaced_pod("default", label_selector="job-name=download")
        .items[0]
        .metadata.name
    )
    assert "download progress: 100%" in core.read_namespaced_pod_log(pod_name, "default")


def test_admin_api_injects_faults_over_https(
    cluster: ApiServer, core: client.CoreV1Api, tmp_path: Any
) -> None:
    import json
    import ssl
    import urllib.error
    import urllib.request

    ca = tmp_path / "ca.pem"
    ca.write_text(cluster.ca_pem)
    ctx = ssl.create_default_context(cafile=str(ca))

    def post(path: str, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
        request = urllib.request.Request(
            cluster.endpoint + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {token or cluster.token()}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, context=ctx) as resp:
            result: dict[str, Any] = json.loads(resp.read())
            return result

    core.create_namespaced_pod("default", pod("remote", image="nginx:1.27"))
    eventually(lambda: phase(core, "remote") == "Running")
    assert (
        post("/_sim/faults/crash-pod", {"namespace": "default", "name": "remote", "exit_code": 2})[
            "status"
        ]
        == "Success"
    )
    eventually(
        lambda: (
            core.read_namespaced_pod("remote", "default").status.container_statuses[0].restart_count
            == 1
        )
    )
    assert post("/_sim/faults/kill-pod", {"namespace": "default", "name": "remote"})["status"] == (
        "Success"
    )
    killed = eventually(
        lambda: (p := core.read_namespaced_pod("remote", "default")).status.phase == "Failed" and p
    )
    assert killed.status.reason == "Killed"
    assert killed.status.container_statuses[0].state.terminated.exit_code == 137
    try:
        post("/_sim/faults/crash-pod", {"namespace": "default"})
    except urllib.error.HTTPError as exc:
        assert exc.code == 400
    else:
        raise AssertionError("a bad admin request was accepted")
    try:
        post("/_sim/install", {"component": "keda"}, token="nope")
    except urllib.error.HTTPError as exc:
        assert exc.code == 401
    else:
        raise AssertionError("an unauthenticated admin request was accepted")


def test_readiness_probe_delays_ready_by_the_scaled_initial_delay(core: client.CoreV1Api) -> None:
    probed = pod("probed", image="vllm/vllm-openai:v0.9.0")
    probed["spec"]["containers"][0]["readinessProbe"] = {
        "httpGet": {"path": "/health", "port": 8000},
        "initialDelaySeconds": 150,
        "periodSeconds": 10,
    }
    core.create_namespaced_pod("default", probed)
    eventually(lambda: phase(core, "probed") == "Running")
    assert not core.read_namespaced_pod("probed", "default").status.container_statuses[0].ready
    # 160 s of probing under the fast profile (x0.01) is 1.6 s
    eventually(
        lambda: core.read_namespaced_pod("probed", "default").status.container_statuses[0].ready,
        timeout=10,
    )


def test_events_are_served_by_both_event_apis(
    api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    events = client.EventsV1Api(api_client)
    listed = events.list_namespaced_event("default").items
    assert listed and all(e.event_time and e.regarding.kind for e in listed)
    assert {e.reason for e in listed} >= {"Scheduled", "Started"}
    made = events.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "custom.event"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "hyperpilot.dev/workload-svc",
            "reportingInstance": "workload-svc-0",
            "action": "Checked",
            "reason": "Checked",
            "note": "checked by the product",
            "type": "Normal",
            "regarding": {"kind": "Pod", "name": "remote", "namespace": "default"},
        },
    )
    assert made.note == "checked by the product"
    as_core = core.read_namespaced_event("custom.event", "default")
    assert as_core.message == "checked by the product" and as_core.involved_object.name == "remote"
    assert as_core.reporting_component == "hyperpilot.dev/workload-svc"


def test_hpa_keeps_its_target_within_bounds(
    api_client: client.ApiClient, apps: client.AppsV1Api
) -> None:
    apps.create_namespaced_deployment("default", deployment("scaled", replicas=1))
    hpas = client.AutoscalingV2Api(api_client)
    hpas.create_namespaced_horizontal_pod_autoscaler(
        "default",
        {
            "metadata": {"name": "scaled"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "scaled"},
                "minReplicas": 2,
                "maxReplicas": 4,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 60},
                        },
                    }
                ],
            },
        },
    )
    eventually(lambda: apps.read_namespaced_deployment("scaled", "default").spec.replicas == 2)
    hpa = eventually(
        lambda: (
            (
                h := hpas.read_namespaced_horizontal_pod_autoscaler("scaled", "default")
            ).status.conditions
            and h
        )
    )
    reasons = {c.type: c.reason for c in hpa.status.conditions}
    assert reasons["ScalingActive"] == "FailedGetResourceMetric"


def test_failing_image_pull_backs_off_then_recovers(
    cluster: ApiServer, core: client.CoreV1Api
) -> None:
    cluster.faults.image_pull_failure("private.example/*", "pull access denied")
    core.create_namespaced_pod("default", pod("unpullable", image="private.example/model:1"))

    def waiting_reason() -> str:
        statuses = core.read_namespaced_pod("unpullable", "default").status.container_statuses or []
        return (
            str(statuses[0].state.waiting.reason) if statuses and statuses[0].state.waiting else ""
        )

    eventually(lambda: waiting_reason() == "ImagePullBackOff")
    events = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=unpullable"
    ).items
    assert any(e.reason == "Failed" and "pull access denied" in e.message for e in events)
    assert phase(core, "unpullable") == "Pending"
    cluster.faults.clear_image_pull_failure("private.example/*")
    eventually(lambda: phase(core, "unpullable") == "Running")
