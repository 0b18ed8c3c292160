"""Conformance: the emulator refuses what a real API server refuses, in upstream's words.

Driven with the project's pinned kubectl and the official Python client; each test names the
defect it guards against (issue 24, "Kubernetes emulator").
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable

import pytest
from kubernetes import client, config

from sim.k8s import ApiServer, KubeWorld
from sim.profile import get_profile
from tests.sim_k8s.conftest import eventually

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
POD_UPDATE = "pod updates may not change fields other than `spec.containers[*].image`"


def _pod(name: str, **container: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.27", **container}]},
    }


def _running(core: client.CoreV1Api, name: str) -> None:
    eventually(
        lambda: core.read_namespaced_pod(name, "default").status.phase == "Running",
        timeout=20,
    )


@pytest.fixture(scope="module")
def batch_api(api_client: client.ApiClient) -> client.BatchV1Api:
    return client.BatchV1Api(api_client)


def _message(exc: client.ApiException) -> str:
    return str(json.loads(exc.body)["message"])


def _refused(kubectl: Kubectl, *args: str, stdin: str | None = None) -> str:
    result = kubectl(*args, check=False, stdin=stdin)
    assert result.returncode != 0, result.stdout
    return result.stderr


# ---- immutability ----------------------------------------------------------------------------


def test_pod_node_name_is_immutable_by_merge_patch(
    kubectl: Kubectl, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", _pod("imm-node"))
    _running(core, "imm-node")
    err = _refused(
        kubectl,
        "patch",
        "pod",
        "imm-node",
        "--type=merge",
        "-p",
        '{"spec":{"nodeName":"elsewhere"}}',
    )
    assert 'The Pod "imm-node" is invalid: spec: Forbidden: ' + POD_UPDATE in err
    assert core.read_namespaced_pod("imm-node", "default").spec.node_name != "elsewhere"


def test_pod_update_allows_image_deadline_and_added_tolerations(
    kubectl: Kubectl, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", _pod("imm-ok"))
    _running(core, "imm-ok")
    kubectl("set", "image", "pod/imm-ok", "main=nginx:1.28")
    kubectl("patch", "pod", "imm-ok", "-p", '{"spec":{"activeDeadlineSeconds":600}}')
    toleration = '{"spec":{"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"}]}}'
    kubectl("patch", "pod", "imm-ok", "-p", toleration)
    pod = core.read_namespaced_pod("imm-ok", "default")
    assert pod.spec.containers[0].image == "nginx:1.28"
    assert pod.spec.active_deadline_seconds == 600
    err = _refused(kubectl, "patch", "pod", "imm-ok", "-p", '{"spec":{"hostname":"other"}}')
    assert POD_UPDATE in err


def test_deployment_selector_is_immutable_by_apply(kubectl: Kubectl) -> None:
    manifest = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: imm-sel}
spec:
  selector: {matchLabels: {app: imm-sel%s}}
  template:
    metadata: {labels: {app: imm-sel%s}}
    spec: {containers: [{name: c, image: nginx:1.27}]}
"""
    kubectl("apply", "-f", "-", stdin=manifest % ("", ""))
    err = _refused(kubectl, "apply", "-f", "-", stdin=manifest % (", tier: web", ", tier: web"))
    assert (
        'The Deployment "imm-sel" is invalid: spec.selector: Invalid value: v1.LabelSelector'
        '{MatchLabels:map[string]string{"app":"imm-sel", "tier":"web"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    ) in err


def test_replicaset_selector_is_immutable(apps: client.AppsV1Api) -> None:
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "imm-rs"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "imm-rs"}},
            "template": {
                "metadata": {"labels": {"app": "imm-rs", "v": "1"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
        },
    }
    apps.create_namespaced_replica_set("default", rs)
    patch = {"spec": {"selector": {"matchLabels": {"app": "imm-rs", "v": "1"}}}}
    with pytest.raises(client.ApiException) as exc:
        apps.patch_namespaced_replica_set("imm-rs", "default", patch)
    assert exc.value.status == 422
    assert "spec.selector: Invalid value" in _message(
        exc.value
    ) and "field is immutable" in _message(exc.value)


def test_job_pod_template_is_immutable(kubectl: Kubectl) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: batch/v1
kind: Job
metadata: {name: imm-job}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox:1.36, command: [sleep, "30"]}]
""",
    )
    err = _refused(kubectl, "set", "image", "job/imm-job", "c=busybox:1.37")
    assert 'Job.batch "imm-job" is invalid: spec.template: Invalid value: ' in err
    assert "field is immutable" in err
    err = _refused(kubectl, "patch", "job", "imm-job", "-p", '{"spec":{"completions":3}}')
    assert "spec.completions: Invalid value: 3: field is immutable" in err
    kubectl("patch", "job", "imm-job", "-p", '{"spec":{"activeDeadlineSeconds":600}}')


def test_service_cluster_ip_is_immutable(kubectl: Kubectl) -> None:
    ip = kubectl("get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}").stdout
    other = ip.rsplit(".", 1)[0] + ".250"
    err = _refused(
        kubectl,
        "patch",
        "svc",
        "kubernetes",
        "--type=merge",
        "-p",
        f'{{"spec":{{"clusterIP":"{other}"}}}}',
    )
    assert (
        f'The Service "kubernetes" is invalid: spec.clusterIPs[0]: Invalid value: '
        f'[]string{{"{other}"}}: may not change once set'
    ) in err


def test_immutable_configmap_and_secret_refuse_data_changes(kubectl: Kubectl) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: v1
kind: ConfigMap
metadata: {name: imm-cm}
immutable: true
data: {a: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: imm-secret}
immutable: true
stringData: {a: "1"}
""",
    )
    err = _refused(kubectl, "patch", "cm", "imm-cm", "-p", '{"data":{"a":"2"}}')
    assert "data: Forbidden: field is immutable when `immutable` is set" in err
    err = _refused(kubectl, "patch", "secret", "imm-secret", "-p", '{"immutable":false}')
    assert "immutable: Forbidden: field is immutable when `immutable` is set" in err
    err = _refused(kubectl, "patch", "secret", "imm-secret", "-p", '{"type":"kubernetes.io/tls"}')
    assert "type: Invalid value" in err and "field is immutable" in err


def test_pvc_spec_is_immutable_except_requests_of_bound_claims(core: client.CoreV1Api) -> None:
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "imm-pvc"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "nothing-provisions-this",
        },
    }
    core.create_namespaced_persistent_volume_claim("default", pvc)
    with pytest.raises(client.ApiException) as exc:
        core.patch_namespaced_persistent_volume_claim(
            "imm-pvc", "default", {"spec": {"accessModes": ["ReadWriteMany"]}}
        )
    assert exc.value.status == 422
    assert "spec: Forbidden: spec is immutable after creation" in _message(exc.value)


def test_pv_source_is_immutable(core: client.CoreV1Api) -> None:
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "imm-pv"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data/a"},
        },
    }
    core.create_persistent_volume(pv)
    with pytest.raises(client.ApiException) as exc:
        core.patch_persistent_volume("imm-pv", {"spec": {"hostPath": {"path": "/data/b"}}})
    assert exc.value.status == 422
    assert "spec.persistentvolumesource: Forbidden" in _message(exc.value)


def test_node_provider_id_is_immutable(core: client.CoreV1Api) -> None:
    node = core.list_node().items[0]
    assert node.spec.provider_id
    with pytest.raises(client.ApiException) as exc:
        core.patch_node(node.metadata.name, {"spec": {"providerID": "aws:///x/i-0"}})
    assert exc.value.status == 422
    assert "node updates may not change providerID" in _message(exc.value)


# ---- quantities and extended resources -------------------------------------------------------


def test_malformed_quantity_is_refused(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    manifest = """
apiVersion: v1
kind: Pod
metadata: {name: bad-qty}
spec:
  containers: [{name: c, image: nginx:1.27, resources: {requests: {memory: 12XB}}}]
"""
    err = _refused(kubectl, "apply", "--validate=false", "-f", "-", stdin=manifest)
    assert 'Pod in version "v1" cannot be handled as a Pod: ' + QUANTITY_FORMAT in err
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_pod(
            "default", _pod("bad-qty2", resources={"limits": {"cpu": "1.2.3"}})
        )
    assert exc.value.status == 400 and QUANTITY_FORMAT in _message(exc.value)


def test_gpu_request_without_equal_limit_is_refused(core: client.CoreV1Api) -> None:
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_pod(
            "default", _pod("gpu-nolimit", resources={"requests": {"nvidia.com/gpu": "1"}})
        )
    assert exc.value.status == 422
    assert (
        "spec.containers[0].resources.limits: Required value: Limit must be set for non "
        "overcommitable resources"
    ) in _message(exc.value)
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_pod(
            "default",
            _pod(
                "gpu-unequal",
                resources={"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}},
            ),
        )
    assert (
        'spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "1": must be '
        "equal to nvidia.com/gpu limit of 2"
    ) in _message(exc.value)
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_pod(
            "default",
            _pod("cpu-over", resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        )
    assert "must be less than or equal to cpu limit of 1" in _message(exc.value)


# ---- field selectors -------------------------------------------------------------------------


def test_unknown_field_selector_is_refused(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    err = _refused(kubectl, "get", "pods", "--field-selector", "spec.foo=bar")
    assert (
        'Error from server (BadRequest): Unable to find "/v1, Resource=pods" that match label '
        'selector "", field selector "spec.foo=bar": field label not supported: spec.foo'
    ) in err
    with pytest.raises(client.ApiException) as exc:
        core.list_namespaced_config_map("default", field_selector="data.a=1")
    assert exc.value.status == 400 and "field label not supported: data.a" in _message(exc.value)
    assert kubectl("get", "pods", "--field-selector", "status.phase=Running,spec.nodeName!=x")
    core.list_namespaced_event("default", field_selector="involvedObject.kind=Pod,type=Normal")


# ---- pod logs --------------------------------------------------------------------------------


def test_log_parameters_are_validated(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _pod("logs-params"))
    _running(core, "logs-params")
    base = "/api/v1/namespaces/default/pods/logs-params/log?"
    err = _refused(kubectl, "get", "--raw", base + "tailLines=abc")
    assert 'Error from server (BadRequest): strconv.ParseInt: parsing "abc": invalid syntax' in err
    err = _refused(kubectl, "get", "--raw", base + "sinceTime=garbage")
    assert 'BadRequest): parsing time "garbage"' in err
    with pytest.raises(client.ApiException) as exc:
        core.read_namespaced_pod_log("logs-params", "default", since_seconds=-5)
    assert exc.value.status == 422
    assert "sinceSeconds: Invalid value: -5: must be greater than 0" in _message(exc.value)
    with pytest.raises(client.ApiException) as exc:
        core.read_namespaced_pod_log("logs-params", "default", tail_lines=-1)
    assert "tailLines: Invalid value: -1: must be greater than or equal to 0" in _message(exc.value)


def test_previous_logs_of_a_container_that_never_restarted(
    kubectl: Kubectl, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", _pod("logs-prev"))
    _running(core, "logs-prev")
    err = _refused(kubectl, "logs", "logs-prev", "--previous")
    assert (
        'Error from server (BadRequest): previous terminated container "main" in pod '
        '"logs-prev" not found'
    ) in err


# ---- protobuf request bodies -----------------------------------------------------------------


def test_kubectl_create_sends_protobuf_and_is_understood(
    kubectl: Kubectl, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    assert kubectl("create", "namespace", "pb-ns").stdout.strip() == "namespace/pb-ns created"
    assert core.read_namespace("pb-ns").status.phase == "Active"
    kubectl("create", "secret", "generic", "pb-secret", "--from-literal=token=s3cr3t")
    assert core.read_namespaced_secret("pb-secret", "default").data == {"token": "czNjcjN0"}
    kubectl("create", "configmap", "pb-cm", "--from-literal=a=1")
    assert core.read_namespaced_config_map("pb-cm", "default").data == {"a": "1"}
    kubectl("create", "deployment", "pb-dep", "--image=nginx:1.27", "--replicas=0", "--port=80")
    dep = apps.read_namespaced_deployment("pb-dep", "default")
    assert dep.spec.replicas == 0  # a pointer field's zero survives decoding
    assert dep.spec.selector.match_labels == {"app": "pb-dep"}
    assert dep.spec.template.spec.containers[0].ports[0].container_port == 80
    kubectl("create", "service", "nodeport", "pb-svc", "--tcp=80:8080")
    port = core.read_namespaced_service("pb-svc", "default").spec.ports[0]
    assert (port.port, port.target_port, port.node_port > 0) == (80, 8080, True)
    kubectl("create", "job", "pb-job", "--image=busybox:1.36", "--", "echo", "hi")
    kubectl("create", "role", "pb-role", "--verb=get", "--resource=pods")
    kubectl("create", "rolebinding", "pb-rb", "--role=pb-role", "--user=someone")
    kubectl("create", "cronjob", "pb-cron", "--image=busybox:1.36", "--schedule=*/5 * * * *")
    kubectl("create", "pdb", "pb-pdb", "--selector=app=pb", "--min-available=1")
    kubectl("create", "quota", "pb-quota", "--hard=cpu=1,pods=2")
    # DeleteOptions arrive as protobuf too: an orphaning delete leaves the ReplicaSets
    eventually(
        lambda: apps.list_namespaced_replica_set("default", label_selector="app=pb-dep").items
    )
    kubectl("delete", "deployment", "pb-dep", "--cascade=orphan")
    assert apps.list_namespaced_replica_set("default", label_selector="app=pb-dep").items


def test_auth_can_i_and_whoami(kubectl: Kubectl) -> None:
    assert kubectl("auth", "can-i", "create", "deployments").stdout.strip() == "yes"
    assert "*.*" in kubectl("auth", "can-i", "--list").stdout
    who = kubectl("auth", "whoami").stdout
    assert "Username    kubernetes-admin" in who and "system:masters" in who


def test_broken_protobuf_body_is_a_bad_request(
    api_client: client.ApiClient, cluster: ApiServer
) -> None:
    host = api_client.configuration.host
    headers = {
        "Content-Type": "application/vnd.kubernetes.protobuf",
        "Authorization": f"Bearer {cluster.token()}",
    }
    response = api_client.call_api(
        "POST", f"{host}/api/v1/namespaces", header_params=headers, body=b"k8s\x00\xff\xff"
    )
    assert response.status == 400


# ---- OpenAPI ---------------------------------------------------------------------------------


def test_apply_of_a_kind_without_its_crd_says_no_matches_for_kind(kubectl: Kubectl) -> None:
    # a group no test installs: kubectl's discovery cache (per host:port) cannot know it
    manifest = "apiVersion: absent.example.com/v1\nkind: Orphan\nmetadata: {name: orphan}\n"
    err = _refused(kubectl, "apply", "-f", "-", stdin=manifest)
    assert 'no matches for kind "Orphan" in version "absent.example.com/v1"' in err
    assert "ensure CRDs are installed first" in err


def test_openapi_v2_and_v3_are_served_from_the_schemas(kubectl: Kubectl) -> None:
    v2 = json.loads(kubectl("get", "--raw", "/openapi/v2").stdout)
    assert v2["swagger"] == "2.0"
    pod = v2["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["properties"]["spec"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec"
    v3 = json.loads(kubectl("get", "--raw", "/openapi/v3").stdout)
    assert "api/v1" in v3["paths"] and "apis/apps/v1" in v3["paths"]
    assert "nodeName <string>" in kubectl("explain", "pods.spec.nodeName").stdout


# ---- server-side tables ----------------------------------------------------------------------


def _header(out: str) -> list[str]:
    return [c for c in out.splitlines()[0].split("  ") if c.strip()]


def test_tables_have_upstream_columns_and_wide_ones(
    kubectl: Kubectl, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", _pod("table-pod"))
    _running(core, "table-pod")
    narrow = _header(kubectl("get", "pods").stdout)
    assert [c.strip() for c in narrow] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    wide = [c.strip() for c in _header(kubectl("get", "pods", "-o", "wide").stdout)]
    assert wide == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED NODE",
        "READINESS GATES",
    ]
    nodes = [c.strip() for c in _header(kubectl("get", "nodes", "-o", "wide").stdout)]
    assert nodes[-5:] == [
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    svc = [c.strip() for c in _header(kubectl("get", "svc", "-o", "wide").stdout)]
    assert svc[-1] == "SELECTOR"


def test_events_table_starts_with_last_seen(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _pod("table-events"))
    _running(core, "table-events")
    narrow = [c.strip() for c in _header(kubectl("get", "events").stdout)]
    assert narrow == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    wide = [c.strip() for c in _header(kubectl("get", "events", "-o", "wide").stdout)]
    assert wide == [
        "LAST SEEN",
        "TYPE",
        "REASON",
        "OBJECT",
        "SUBOBJECT",
        "SOURCE",
        "MESSAGE",
        "FIRST SEEN",
        "COUNT",
        "NAME",
    ]
    rows = kubectl("get", "events", "--field-selector", "involvedObject.name=table-events")
    assert "pod/table-events" in rows.stdout and "Scheduled" in rows.stdout


# ---- what a pod runs -------------------------------------------------------------------------


def test_operator_controllers_do_not_run_the_training_program(
    cluster: ApiServer, core: client.CoreV1Api
) -> None:
    cluster.install("hyperpod-training-operator")

    def controller() -> client.V1Pod | None:
        pods = core.list_namespaced_pod("aws-hyperpod").items
        running = [p for p in pods if p.status.phase == "Running"]
        return running[0] if running else None

    pod = eventually(controller, timeout=20)
    # a training program would have logged loss lines and exited within a few intervals
    time.sleep(max(cluster.profile.container_start, 0.02) * 10)
    again = core.read_namespaced_pod(pod.metadata.name, "aws-hyperpod")
    assert again.status.phase == "Running"
    assert again.status.container_statuses[0].restart_count == 0
    log = core.read_namespaced_pod_log(pod.metadata.name, "aws-hyperpod")
    assert "loss=" not in log


def test_a_jobs_pod_runs_the_training_program_named_by_its_image(
    kubectl: Kubectl, core: client.CoreV1Api
) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: batch/v1
kind: Job
metadata: {name: trainer}
spec:
  template:
    metadata: {annotations: {sim.hyperpilot.dev/steps: "3"}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/llama-train:1}]
""",
    )

    def trained() -> bool:
        pods = core.list_namespaced_pod("default", label_selector="job-name=trainer").items
        try:
            return bool(pods) and "loss=" in core.read_namespaced_pod_log(
                pods[0].metadata.name, "default"
            )
        except client.ApiException:  # still ContainerCreating
            return False

    eventually(trained, timeout=20)


# ---- one source of facts ---------------------------------------------------------------------


def test_version_service_cidr_and_nodes_follow_the_eks_description() -> None:
    world = KubeWorld(get_profile("fast"))
    world.eks_cluster_described(
        "described",
        {"version": "1.32", "kubernetesNetworkConfig": {"serviceIpv4Cidr": "10.200.0.0/16"}},
        [
            {
                "nodegroupName": "workers",
                "instanceTypes": ["m6i.xlarge"],
                "scalingConfig": {"desiredSize": 3},
                "capacityType": "SPOT",
                "status": "ACTIVE",
            }
        ],
    )
    try:
        world.start_cluster("described")
        api = config.new_client_from_config_dict(world.api_server("described").kubeconfig())
        version = client.VersionApi(api).get_code()
        assert (version.major, version.minor) == ("1", "32")
        core = client.CoreV1Api(api)
        assert core.read_namespaced_service("kubernetes", "default").spec.cluster_ip == "10.200.0.1"
        nodes = core.list_node().items
        assert len(nodes) == 3
        for node in nodes:
            labels = node.metadata.labels
            assert labels["eks.amazonaws.com/nodegroup"] == "workers"
            assert labels["eks.amazonaws.com/capacityType"] == "SPOT"
            assert labels["node.kubernetes.io/instance-type"] == "m6i.xlarge"
            assert node.status.node_info.kubelet_version.startswith("v1.32.")
        api.close()
    finally:
        world.close()


def test_a_cluster_without_node_groups_has_no_node_group_nodes() -> None:
    world = KubeWorld(get_profile("fast"))
    world.eks_cluster_described("bare", {"version": "1.33"}, [])
    try:
        world.start_cluster("bare")
        server = world.api_server("bare")
        assert server.list_objects("v1", "Node") == []
        # EKS's default service CIDR when none is given, as the simulated EKS describes it
        kubernetes = server.get("v1", "Service", "kubernetes", "default")
        assert kubernetes is not None and kubernetes["spec"]["clusterIP"] == "172.20.0.1"
    finally:
        world.close()


# ---- server-side apply -----------------------------------------------------------------------

SSA_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: ssa}
spec:
  replicas: %d
  selector: {matchLabels: {app: ssa}}
  template:
    metadata: {labels: {app: ssa}}
    spec: {containers: [{name: c, image: "%s"}]}
"""


def test_server_side_apply_conflicts_between_field_managers(
    kubectl: Kubectl, apps: client.AppsV1Api
) -> None:
    def apply(
        manager: str, replicas: int, image: str, *flags: str
    ) -> subprocess.CompletedProcess[str]:
        return kubectl(
            "apply",
            "--server-side",
            f"--field-manager={manager}",
            *flags,
            "-f",
            "-",
            stdin=SSA_DEPLOYMENT % (replicas, image),
            check=False,
        )

    assert apply("alice", 1, "nginx:1.27").returncode == 0
    one = apply("bob", 2, "nginx:1.27")
    assert one.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas' in one.stderr
    two = apply("bob", 2, "nginx:1.28")
    assert (
        'Apply failed with 2 conflicts: conflicts with "alice":\n- .spec.replicas\n'
        '- .spec.template.spec.containers[name="c"].image'
    ) in two.stderr
    assert apply("bob", 1, "nginx:1.27").returncode == 0  # the same values: shared, no conflict
    assert apply("bob", 3, "nginx:1.28", "--force-conflicts").returncode == 0
    assert apps.read_namespaced_deployment("ssa", "default").spec.replicas == 3
    back = apply("alice", 1, "nginx:1.27")
    assert 'conflicts with "bob":' in back.stderr  # force moved the fields to bob
    with pytest.raises(client.ApiException) as exc:
        apps.patch_namespaced_deployment(
            "ssa",
            "default",
            {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 7}},
            field_manager="carol",
            _content_type="application/apply-patch+yaml",
        )
    assert exc.value.status == 409
    body = json.loads(exc.value.body)
    assert body["reason"] == "Conflict"
    assert body["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "bob"',
            "field": ".spec.replicas",
        }
    ]


def test_an_update_takes_ownership_from_an_applier(kubectl: Kubectl) -> None:
    kubectl("create", "configmap", "owned", "--from-literal=a=1")
    err = _refused(
        kubectl,
        "apply",
        "--server-side",
        "-f",
        "-",
        stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned}\ndata: {a: '2'}\n",
    )
    assert 'conflict with "kubectl-create" using v1 at ' in err and ": .data.a" in err


def test_server_side_apply_upgrades_a_client_side_applied_object(kubectl: Kubectl) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: upgraded}\ndata: {a: '%s'}\n"
    kubectl("apply", "-f", "-", stdin=manifest % "1")
    kubectl("apply", "-f", "-", stdin=manifest % "2")
    out = kubectl("apply", "--server-side", "-f", "-", stdin=manifest % "3").stdout
    assert "serverside-applied" in out


# ---- rollout history -------------------------------------------------------------------------


def test_rollout_undo_reuses_the_revisions_replicaset(
    kubectl: Kubectl, apps: client.AppsV1Api
) -> None:
    kubectl("create", "deployment", "undo", "--image=nginx:1.27")

    def replicasets() -> dict[str, tuple[str, int]]:
        items = apps.list_namespaced_replica_set("default", label_selector="app=undo").items
        return {
            rs.metadata.name: (
                rs.metadata.annotations.get("deployment.kubernetes.io/revision", ""),
                rs.spec.replicas,
            )
            for rs in items
        }

    first = eventually(replicasets)
    (original,) = first
    kubectl("set", "image", "deploy/undo", "nginx=nginx:1.28")
    kubectl("rollout", "status", "deploy/undo", "--timeout=30s")
    assert len(replicasets()) == 2
    assert "rolled back" in kubectl("rollout", "undo", "deploy/undo").stdout
    kubectl("rollout", "status", "deploy/undo", "--timeout=30s")
    after = eventually(lambda: (r := replicasets())[original][1] == 1 and r)
    assert len(after) == 2  # no new ReplicaSet: the first one is back, as revision 3
    assert after[original] == ("3", 1)
    rs = apps.read_namespaced_replica_set(original, "default")
    assert rs.metadata.annotations["deployment.kubernetes.io/revision-history"] == "1"
    dep = apps.read_namespaced_deployment("undo", "default")
    assert dep.metadata.annotations["deployment.kubernetes.io/revision"] == "3"
    history = kubectl("rollout", "history", "deploy/undo").stdout.split()
    assert history[-4:] == ["2", "<none>", "3", "<none>"]


def test_a_suspended_job_may_change_its_pods_scheduling(batch_api: client.BatchV1Api) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "suspended"},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox:1.36", "command": ["true"]}],
                }
            },
        },
    }
    batch_api.create_namespaced_job("default", job)
    scheduling = {"spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}}
    batch_api.patch_namespaced_job("suspended", "default", scheduling)
    with pytest.raises(client.ApiException) as exc:
        batch_api.patch_namespaced_job(
            "suspended",
            "default",
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}}
                }
            },
        )
    assert exc.value.status == 422 and "spec.template" in _message(exc.value)


def test_protobuf_pod_template_keeps_volumes_probes_quantities_and_zero_pointers(
    kubectl: Kubectl, batch_api: client.BatchV1Api
) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: batch/v1
kind: CronJob
metadata: {name: pb-cron-full}
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      backoffLimit: 0
      template:
        spec:
          restartPolicy: Never
          volumes: [{name: scratch, emptyDir: {}}, {name: cfg, configMap: {name: x, optional: true}}]
          containers:
          - name: c
            image: busybox:1.36
            command: [sh, -c, "echo hi"]
            env: [{name: B, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
            resources: {requests: {cpu: 250m, memory: 64Mi}, limits: {cpu: "1", memory: 1Gi}}
            readinessProbe: {httpGet: {path: /h, port: 8080}, periodSeconds: 5}
            volumeMounts: [{name: scratch, mountPath: /scratch}]
""",
    )
    kubectl("create", "job", "pb-from-cron", "--from=cronjob/pb-cron-full")  # sent as protobuf
    job = batch_api.read_namespaced_job("pb-from-cron", "default")
    assert job.spec.backoff_limit == 0
    pod = job.spec.template.spec
    assert pod.volumes[0].empty_dir is not None and pod.volumes[1].config_map.optional is True
    container = pod.containers[0]
    assert container.resources.requests == {"cpu": "250m", "memory": "64Mi"}
    assert container.readiness_probe.http_get.port == 8080
    assert container.readiness_probe.http_get.path == "/h"
    assert container.env[0].value_from.field_ref.field_path == "metadata.name"
