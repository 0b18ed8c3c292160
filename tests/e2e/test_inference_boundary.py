"""The API-server request forgery through endpoint invoke, against the real gateway,
inference-svc and the Kubernetes emulator: a `model` that would climb out of the service-proxy
path (to create a ClusterRoleBinding of cluster-admin for system:anonymous, or a privileged pod
in kube-system) is a 422 on `model`, and afterwards the cluster holds neither. Namespaces are a
boundary (an endpoint is not deployed into kube-system or an operator's namespace), a pool
worker's body is a pod name and nothing else, and credentials stay out of an endpoint's env."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as kubeconfig

from sim.aws import SimulatedAws
from tests.e2e.conftest import Client, RunningStack
from tests.e2e.test_inference import _delete, _deploy, _field, _instance_type, _kubeconfig, _vllm

CLIMB = "x/../../../../../../"
CRB_PATH = "apis/rbac.authorization.k8s.io/v1/clusterrolebindings?x="
POD_PATH = "api/v1/namespaces/kube-system/pods?x="
FORGED_MODELS = [
    CLIMB + CRB_PATH,
    CLIMB + POD_PATH,
    "x/" + "%2e%2e/" * 6 + CRB_PATH,
    "x/" + "..%2F" * 6 + CRB_PATH,
    "x/" + "%252e%252e/" * 6 + CRB_PATH,
    "x\\..\\..\\..\\" + CRB_PATH,
    "http://evil/" + CRB_PATH,
    "qwen#" + CRB_PATH,
]
CLUSTER_ADMIN_FOR_ANONYMOUS = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "hp-forged-admin"},
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "cluster-admin",
    },
    "subjects": [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}
    ],
    "messages": [{"role": "user", "content": "hi"}],
}
PRIVILEGED_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "hp-forged-pod", "namespace": "kube-system"},
    "spec": {
        "hostPID": True,
        "containers": [
            {
                "name": "x",
                "image": "alpine",
                "command": ["sleep", "infinity"],
                "securityContext": {"privileged": True},
            }
        ],
    },
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture(scope="module")
def official(
    created_cluster: tuple[RunningStack, str],
    sim_aws: SimulatedAws,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[k8s.ApiClient]:
    """The official Kubernetes client against the cluster's emulated API server."""
    _, name = created_cluster
    path = _kubeconfig(sim_aws, name, tmp_path_factory.mktemp("kube") / "config")
    api: k8s.ApiClient = kubeconfig.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(path)
    )
    yield api
    api.close()  # type: ignore[no-untyped-call]


def _plain(api: k8s.ApiClient, items: Any) -> list[dict[str, Any]]:
    return [api.sanitize_for_serialization(i) for i in items]  # type: ignore[no-untyped-call]


def _bindings(api: k8s.ApiClient) -> list[dict[str, Any]]:
    return _plain(api, k8s.RbacAuthorizationV1Api(api).list_cluster_role_binding().items)


def _binding_names(api: k8s.ApiClient) -> set[str]:
    return {b["metadata"]["name"] for b in _bindings(api)}


def _system_pods(api: k8s.ApiClient) -> set[str]:
    pods = _plain(api, k8s.CoreV1Api(api).list_namespaced_pod("kube-system").items)
    return {p["metadata"]["name"] for p in pods}


def _anonymous_admins(api: k8s.ApiClient) -> list[str]:
    return [
        b["metadata"]["name"]
        for b in _bindings(api)
        if b["roleRef"]["name"] == "cluster-admin"
        and any(
            s.get("name") in ("system:anonymous", "system:unauthenticated")
            for s in b.get("subjects") or []
        )
    ]


def _assigned_pool(api: Client, cluster: str) -> str:
    """A model pool with one worker serving `qwen` (its Service pool-qwen exists)."""
    params = {"cluster": cluster}
    _deploy(api, cluster, _vllm("guard", _instance_type(api, cluster), "model_pool"))
    (worker,) = api.get("/api/v1/endpoints/guard", params=params).json()["live"]["pods"]
    assign = api.post(
        "/api/v1/endpoints/guard/pool/assign",
        {"pod": worker["name"], "model": "qwen"},
        params=params,
    )
    assert assign.status_code == 202, assign.text
    assert api.wait(assign.json()["operation_id"])["status"] == "succeeded"
    return str(worker["name"])


def test_a_forged_model_reaches_no_api_server_path(
    created_cluster: tuple[RunningStack, str], official: k8s.ApiClient
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    params = {"cluster": cluster}
    _assigned_pool(api, cluster)
    bindings_before = _binding_names(official)
    pods_before = _system_pods(official)
    try:
        for model in FORGED_MODELS:
            for route in ("invoke", "v1/chat/completions", "v1/completions"):
                for forged in (CLUSTER_ADMIN_FOR_ANONYMOUS, PRIVILEGED_POD):
                    answer = api.post(
                        f"/api/v1/endpoints/guard/{route}", forged | {"model": model}, params=params
                    )
                    field = _field(answer)
                    assert field["field"] == "model", (model, route, field)
                    assert field["rule"] == "model_id" and field["hint"], field
        # A model id that names no Service of the pool is refused by inference-svc, on `model`.
        for model in ("Qwen/Qwen3-0.6B", "llama3.1"):
            field = _field(
                api.post(
                    "/api/v1/endpoints/guard/invoke",
                    CLUSTER_ADMIN_FOR_ANONYMOUS | {"model": model},
                    params=params,
                )
            )
            assert field["field"] == "model" and field["hint"], field
        # A model that is not a string, on a pool or not.
        assert _field(api.post("/api/v1/endpoints/guard/invoke", {"model": 7}, params=params))[
            "field"
        ] == ("model")

        # Nothing was created: no ClusterRoleBinding at all, and no pod in kube-system.
        assert _anonymous_admins(official) == []
        assert _binding_names(official) == bindings_before
        assert "hp-forged-admin" not in _binding_names(official)
        assert _system_pods(official) == pods_before
        assert "hp-forged-pod" not in _system_pods(official)

        # The pool still answers the model its worker serves.
        answer = api.post(
            "/api/v1/endpoints/guard/invoke",
            {"model": "qwen", "messages": [{"role": "user", "content": "hi"}]},
            params=params,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["object"] == "chat.completion"
    finally:
        _delete(api, cluster, "guard")


def test_a_pool_worker_body_is_a_pod_name_and_nothing_else(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    params = {"cluster": cluster}
    worker = _assigned_pool(api, cluster)
    try:
        for pod in ("a.", "a..b", ".a", "A"):
            field = _field(
                api.post("/api/v1/endpoints/guard/pool/unassign", {"pod": pod}, params=params)
            )
            assert field["field"] == "pod" and field["hint"], field
        extra = _field(
            api.post(
                "/api/v1/endpoints/guard/pool/unassign",
                {"pod": worker, "model": "qwen"},
                params=params,
            )
        )
        assert extra["field"] == "model" and extra["rule"] == "extra_forbidden"
        assert "pod" in extra["hint"]
        # The model a worker is assigned names its Service: a name part, nothing more.
        for model in ("llama3.1", "x/../../apis", "Qwen"):
            field = _field(
                api.post(
                    "/api/v1/endpoints/guard/pool/assign",
                    {"pod": worker, "model": model},
                    params=params,
                )
            )
            assert field["field"] == "model", field
        unassign = api.post("/api/v1/endpoints/guard/pool/unassign", {"pod": worker}, params=params)
        assert unassign.status_code == 202, unassign.text
        assert api.wait(unassign.json()["operation_id"])["status"] == "succeeded"
    finally:
        _delete(api, cluster, "guard")


def test_namespaces_are_a_boundary_and_secrets_stay_out_of_the_env(
    created_cluster: tuple[RunningStack, str], official: k8s.ApiClient
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    params = {"cluster": cluster}
    instance_type = _instance_type(api, cluster)
    for namespace in ("kube-system", "kube-public", "keda", "hyperpod-inference-system"):
        body = _vllm("intruder", instance_type, "internal") | {"namespace": namespace}
        for extra in ({}, {"dry_run": "true"}):
            field = _field(api.post("/api/v1/endpoints", body, params=params | extra))
            assert field["field"] == "namespace" and "reserved" in field["message"], field
            assert "kube-system" in field["hint"]
    assert api.get("/api/v1/endpoints/intruder", params=params).status_code == 404
    deployments = _plain(
        official, k8s.AppsV1Api(official).list_namespaced_deployment("kube-system").items
    )
    assert "intruder" not in {d["metadata"]["name"] for d in deployments}

    def with_env(env: dict[str, str]) -> dict[str, Any]:
        body = _vllm("envs", instance_type, "internal")
        body["container"]["env"] = env
        return body

    for env in (
        {"OPENAI_API_KEY": "not-a-real-one"},
        {"AWS_ACCESS_KEY": "AKIAABCDEFGHIJKLMNOP"},
        {"MODEL_OPTS": "AKIAABCDEFGHIJKLMNOP"},
        {"EXTRA": "hf_abcdefghijklmnopqrstuvwxyz0123"},
    ):
        answer = api.post("/api/v1/endpoints", with_env(env), params=params)
        field = _field(answer)
        assert field["field"] == "container.env" and "secret" in field["message"], field
        assert "Secret" in field["hint"] and "Secrets Manager" in field["hint"]
        assert "AKIAABCDEFGHIJKLMNOP" not in answer.text and "hf_abc" not in answer.text
    field = _field(api.post("/api/v1/endpoints", with_env({"HF_TOKEN": "x"}), params=params))
    assert field["field"] == "container.env" and "container.hf_token_secret" in field["hint"]

    # A change to a deployed endpoint is held to the same rule.
    _deploy(api, cluster, with_env({"VLLM_LOGGING_LEVEL": "INFO"}))
    try:
        changed = api.http.patch(
            "/api/v1/endpoints/envs",
            json={"container": {"env": {"OPENAI_API_KEY": "not-a-real-one"}}},
            params=params,
        )
        field = _field(changed)
        assert field["field"] == "container.env" and "Secret" in field["hint"], field
    finally:
        _delete(api, cluster, "envs")
