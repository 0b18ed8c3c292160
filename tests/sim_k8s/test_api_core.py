"""API semantics through the official synchronous client over HTTPS."""

from __future__ import annotations

import base64
import json
from typing import Any

import boto3
import pytest
from botocore.signers import RequestSigner
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from sim.k8s import ApiServer, make_token
from tests.sim_k8s.conftest import deployment, eventually


def _status(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    assert body["kind"] == "Status"
    return body


def test_version_and_discovery(api_client: client.ApiClient) -> None:
    version = client.VersionApi(api_client).get_code()
    assert version.major == "1" and version.git_version.startswith("v1.33")
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"apps", "batch", "apiextensions.k8s.io", "rbac.authorization.k8s.io"} <= groups
    resources = client.CoreV1Api(api_client).get_api_resources().resources
    pods = next(r for r in resources if r.name == "pods")
    assert pods.namespaced and "watch" in pods.verbs and "po" in pods.short_names
    assert {"pods/log", "pods/status"} <= {r.name for r in resources}
    scale = next(
        r
        for r in client.AppsV1Api(api_client).get_api_resources().resources
        if r.name == "deployments/scale"
    )
    assert scale.kind == "Scale" and scale.group == "autoscaling"


def test_bad_tokens_get_401(cluster: ApiServer) -> None:
    for token in ("not-a-token", make_token("some-other-cluster"), "k8s-aws-v1.aGVsbG8"):
        api = config.new_client_from_config_dict(cluster.kubeconfig(token=token))
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(api).list_namespace()
        assert err.value.status == 401
        assert _status(err.value)["reason"] == "Unauthorized"


def test_eks_token_without_cluster_in_url_is_accepted(cluster: ApiServer) -> None:
    url = (
        "https://sts.us-east-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15"
        "&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id&X-Amz-Signature=ab"
    )
    token = "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    api = config.new_client_from_config_dict(cluster.kubeconfig(token=token))
    assert client.CoreV1Api(api).read_namespace("default").metadata.name == "default"


def _signed_token(cluster: str, access_key: str = "testing", secret: str = "testing") -> str:
    """A token as `aws eks get-token` makes it: the cluster goes in a signed header only."""
    session = boto3.session.Session(
        aws_access_key_id=access_key, aws_secret_access_key=secret, region_name="us-east-1"
    )
    sts = session.client("sts")
    signer = RequestSigner(
        sts.meta.service_model.service_id,
        "us-east-1",
        "sts",
        "v4",
        session.get_credentials(),
        sts.meta.events,
    )
    request = {
        "method": "GET",
        "url": "https://sts.us-east-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
        "body": {},
        "headers": {"x-k8s-aws-id": cluster},
        "context": {},
    }
    url = signer.generate_presigned_url(
        request, region_name="us-east-1", expires_in=60, operation_name=""
    )
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def test_signed_eks_tokens_are_checked_for_this_cluster(cluster: ApiServer) -> None:
    good = config.new_client_from_config_dict(
        cluster.kubeconfig(token=_signed_token(cluster.cluster))
    )
    assert client.CoreV1Api(good).read_namespace("default").metadata.name == "default"
    impostor = config.new_client_from_config_dict(
        cluster.kubeconfig(token=_signed_token("another"))
    )
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(impostor).read_namespace("default")
    assert err.value.status == 401
    # signed with a key the emulator does not know: accepted on its shape
    unknown = _signed_token("another", access_key="AKIDUNKNOWN", secret="x")
    api = config.new_client_from_config_dict(cluster.kubeconfig(token=unknown))
    assert client.CoreV1Api(api).read_namespace("default").metadata.name == "default"


def test_crud_and_stale_update_conflict(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "cfg"}, "data": {"a": "1"}}
    )
    assert cm.metadata.uid and cm.metadata.resource_version
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}})
    assert err.value.status == 409 and _status(err.value)["reason"] == "AlreadyExists"
    stale = core.read_namespaced_config_map("cfg", "default")
    fresh = core.read_namespaced_config_map("cfg", "default")
    fresh.data = {"a": "2"}
    updated = core.replace_namespaced_config_map("cfg", "default", fresh)
    assert int(updated.metadata.resource_version) > int(stale.metadata.resource_version)
    stale.data = {"a": "3"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("cfg", "default", stale)
    assert err.value.status == 409 and _status(err.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("cfg", "default").data == {"a": "2"}
    core.delete_namespaced_config_map("cfg", "default")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("cfg", "default")
    assert err.value.status == 404 and _status(err.value)["details"]["name"] == "cfg"


def test_create_with_resource_version_is_400(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": "rv", "resourceVersion": "5"}}
        )
    assert err.value.status == 400


def test_unknown_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("nowhere", {"metadata": {"name": "x"}})
    assert err.value.status == 404
    assert 'namespaces "nowhere" not found' in _status(err.value)["message"]


def test_invalid_deployment_is_422_with_causes(apps: client.AppsV1Api) -> None:
    bad = deployment("bad")
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    bad["spec"]["replicas"] = -1
    with pytest.raises(ApiException) as err:
        apps.create_namespaced_deployment("default", bad)
    status = _status(err.value)
    assert err.value.status == 422 and status["reason"] == "Invalid"
    fields = {c["field"] for c in status["details"]["causes"]}
    assert {"spec.replicas", "spec.template.metadata.labels"} <= fields
    no_image = deployment("noimage")
    del no_image["spec"]["template"]["spec"]["containers"][0]["image"]
    with pytest.raises(ApiException) as err:
        apps.create_namespaced_deployment("default", no_image)
    assert err.value.status == 422
    with pytest.raises(ApiException) as err:
        apps.create_namespaced_deployment("default", deployment("Upper_Case"))
    assert {c["field"] for c in _status(err.value)["details"]["causes"]} == {"metadata.name"}


def test_label_and_field_selectors_and_pagination(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "sel"}})
    for n, (tier, env) in enumerate(
        [("web", "prod"), ("web", "dev"), ("db", "prod"), ("cache", "dev"), ("web", "qa")]
    ):
        core.create_namespaced_config_map(
            "sel", {"metadata": {"name": f"cm-{n}", "labels": {"tier": tier, "env": env}}}
        )
    core.create_namespaced_config_map("sel", {"metadata": {"name": "plain"}})

    def names(**kw: Any) -> list[str]:
        return [i.metadata.name for i in core.list_namespaced_config_map("sel", **kw).items]

    assert names(label_selector="tier=web") == ["cm-0", "cm-1", "cm-4"]
    assert names(label_selector="tier=web,env!=dev") == ["cm-0", "cm-4"]
    assert names(label_selector="env in (prod,qa)") == ["cm-0", "cm-2", "cm-4"]
    assert names(label_selector="tier notin (web,db),tier") == ["cm-3"]
    assert names(label_selector="!tier") == ["kube-root-ca.crt", "plain"] or names(
        label_selector="!tier"
    ) == ["plain"]
    assert names(field_selector="metadata.name=cm-2") == ["cm-2"]
    assert "cm-2" not in names(field_selector="metadata.name!=cm-2")
    first = core.list_namespaced_config_map("sel", limit=2)
    assert len(first.items) == 2 and first.metadata._continue
    assert first.metadata.remaining_item_count >= 3
    seen = [i.metadata.name for i in first.items]
    token = first.metadata._continue
    while token:
        page = core.list_namespaced_config_map("sel", limit=2, _continue=token)
        seen += [i.metadata.name for i in page.items]
        token = page.metadata._continue
    assert seen == names()


def test_generation_finalizers_and_deletion_timestamp(
    core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    created = apps.create_namespaced_deployment("default", deployment("gen", replicas=0))
    assert created.metadata.generation == 1
    patched = apps.patch_namespaced_deployment(
        "gen", "default", {"metadata": {"labels": {"x": "y"}}}
    )
    assert patched.metadata.generation == 1
    patched = apps.patch_namespaced_deployment(
        "gen", "default", {"spec": {"replicas": 0, "minReadySeconds": 5}}
    )
    assert patched.metadata.generation == 2
    cm = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    core.delete_namespaced_config_map("held", "default")
    held = core.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.uid == cm.metadata.uid
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("held", "default")
    assert err.value.status == 404


def test_owner_reference_cascade(core: client.CoreV1Api) -> None:
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "child", "ownerReferences": [ref]}}
    )
    core.create_namespaced_secret(
        "default", {"metadata": {"name": "child-secret", "ownerReferences": [ref]}}
    )
    core.delete_namespaced_config_map("owner", "default")
    for read in (
        lambda: core.read_namespaced_config_map("child", "default"),
        lambda: core.read_namespaced_secret("child-secret", "default"),
    ):
        with pytest.raises(ApiException) as err:
            read()
        assert err.value.status == 404
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner2"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner2", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "orphan", "ownerReferences": [ref]}}
    )
    core.delete_namespaced_config_map("owner2", "default", propagation_policy="Orphan")
    assert not core.read_namespaced_config_map("orphan", "default").metadata.owner_references


def test_dry_run_persists_nothing(core: client.CoreV1Api) -> None:
    def stored() -> list[tuple[str, str]]:
        # The objects themselves: the list's resourceVersion is the store's, which the
        # emulator's controllers move with writes elsewhere.
        found = core.list_namespaced_config_map("default").items
        return sorted((i.metadata.name, i.metadata.resource_version) for i in found)

    before = stored()
    made = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "dry"}}, dry_run="All"
    )
    assert made.metadata.name == "dry"
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("dry", "default")
    assert stored() == before


def test_status_and_scale_subresources(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment("default", deployment("sub", replicas=0))
    for _ in range(10):  # the Deployment controller may write its status between read and replace
        current = apps.read_namespaced_deployment("sub", "default")
        current.status = client.V1DeploymentStatus(replicas=42)
        current.spec.replicas = 0
        try:
            apps.replace_namespaced_deployment("sub", "default", current)
            break
        except ApiException as exc:
            if exc.status != 409:  # a stale resourceVersion: read again, as a client does
                raise
    else:
        raise AssertionError("the replace met a conflict ten times")
    assert (apps.read_namespaced_deployment("sub", "default").status.replicas or 0) != 42
    scale = apps.read_namespaced_deployment_scale("sub", "default")
    assert scale.spec.replicas == 0 and scale.status.selector == "app=sub"
    apps.patch_namespaced_deployment_scale("sub", "default", {"spec": {"replicas": 1}})
    assert apps.read_namespaced_deployment("sub", "default").spec.replicas == 1
    scale.spec.replicas = 3  # `scale` still carries the resourceVersion before the patch
    with pytest.raises(ApiException) as err:
        apps.replace_namespaced_deployment_scale("sub", "default", scale)
    assert err.value.status == 409
    fresh = apps.read_namespaced_deployment_scale("sub", "default")
    fresh.spec.replicas = 0
    assert apps.replace_namespaced_deployment_scale("sub", "default", fresh).spec.replicas == 0


def test_patch_types(api_client: client.ApiClient, apps: client.AppsV1Api) -> None:
    dep = deployment("patchme", replicas=0)
    dep["spec"]["template"]["spec"]["containers"] = [
        {"name": "a", "image": "nginx:1", "env": [{"name": "X", "value": "1"}]},
        {"name": "b", "image": "redis:7"},
    ]
    apps.create_namespaced_deployment("default", dep)
    # strategic merge: containers merge by name, env by name
    apps.patch_namespaced_deployment(
        "patchme",
        "default",
        {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}
                }
            }
        },
    )
    got = apps.read_namespaced_deployment("patchme", "default").spec.template.spec.containers
    assert [c.name for c in got] == ["a", "b"]
    assert {e.name for e in got[0].env} == {"X", "Y"}
    apps.patch_namespaced_deployment(
        "patchme",
        "default",
        [{"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "redis:8"}],
        _content_type="application/json-patch+json",
    )
    got = apps.read_namespaced_deployment("patchme", "default").spec.template.spec.containers
    assert got[1].image == "redis:8"
    apps.patch_namespaced_deployment(
        "patchme",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "busybox:1"}]}}}},
        _content_type="application/merge-patch+json",
    )
    got = apps.read_namespaced_deployment("patchme", "default").spec.template.spec.containers
    assert [c.name for c in got] == ["only"]  # a merge patch replaces lists


def test_server_side_apply(api_client: client.ApiClient, core: client.CoreV1Api) -> None:
    configmaps = DynamicClient(api_client).resources.get(api_version="v1", kind="ConfigMap")

    def apply(manager: str, data: dict[str, str]) -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data}
        configmaps.server_side_apply(body=body, namespace="default", field_manager=manager)

    apply("hyperpilot", {"a": "1", "b": "2"})
    apply("other", {"c": "3"})
    assert core.read_namespaced_config_map("ssa", "default").data == {"a": "1", "b": "2", "c": "3"}
    # a manager that stops applying a field it owned removes it; others' fields stay
    apply("hyperpilot", {"b": "2"})
    cm = core.read_namespaced_config_map("ssa", "default")
    assert cm.data == {"b": "2", "c": "3"}
    mine = next(f for f in cm.metadata.managed_fields if f.manager == "hyperpilot")
    assert mine.operation == "Apply" and mine.fields_v1 == {"f:data": {"f:b": {}}}


def test_server_side_apply_prunes_list_items_by_merge_key(
    api_client: client.ApiClient, apps: client.AppsV1Api
) -> None:
    deployments = DynamicClient(api_client).resources.get(api_version="apps/v1", kind="Deployment")
    body = deployment("ssa-dep", replicas=0)
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
    ]
    deployments.server_side_apply(body=body, namespace="default", field_manager="hyperpilot")
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "B", "value": "2"}]
    deployments.server_side_apply(body=body, namespace="default", field_manager="hyperpilot")
    env = apps.read_namespaced_deployment("ssa-dep", "default").spec.template.spec.containers[0].env
    assert [e.name for e in env] == ["B"]


def test_api_throttling_fault_answers_429(cluster: ApiServer, core: client.CoreV1Api) -> None:
    # The client honours Retry-After on its own: the call succeeds after the throttled attempt.
    before = cluster.faults.throttled
    cluster.faults.throttle(requests=1, retry_after=1)
    assert core.list_namespace().items
    assert cluster.faults.throttled == before + 1
    # Without retries the 429 Status reaches the caller.
    cfg = client.Configuration()
    config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=cfg)
    cfg.retries = False
    cluster.faults.throttle(requests=1, retry_after=3)
    with client.ApiClient(cfg) as raw, pytest.raises(ApiException) as err:
        client.CoreV1Api(raw).list_namespace()
    assert err.value.status == 429
    assert err.value.headers["Retry-After"] == "3"
    assert _status(err.value)["reason"] == "TooManyRequests"


def test_namespace_deletion_removes_contents(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "x"}})
    eventually(lambda: core.read_namespaced_service_account("default", "doomed"))
    core.delete_namespace("doomed")

    def gone() -> bool:
        try:
            core.read_namespace("doomed")
        except ApiException as exc:
            return exc.status == 404
        return False

    eventually(gone)
    assert not core.list_namespaced_config_map("doomed").items


def test_access_reviews_answer_without_storing(api_client: client.ApiClient) -> None:
    authz = client.AuthorizationV1Api(api_client)
    review = authz.create_self_subject_access_review(
        {
            "spec": {
                "resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}
            }
        }
    )
    assert review.status.allowed is True
    who = client.AuthenticationV1Api(api_client).create_self_subject_review({})
    assert "system:masters" in who.status.user_info.groups


def test_delete_collection_and_foreground_cascade(
    core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    core.create_namespace({"metadata": {"name": "bulk"}})
    for n in range(4):
        core.create_namespaced_config_map(
            "bulk", {"metadata": {"name": f"b{n}", "labels": {"drop": str(n % 2 == 0).lower()}}}
        )
    core.delete_collection_namespaced_config_map("bulk", label_selector="drop=true")
    left = {
        c.metadata.name
        for c in core.list_namespaced_config_map("bulk", label_selector="drop").items
    }
    assert left == {"b1", "b3"}
    apps.create_namespaced_deployment("bulk", deployment("fg", replicas=1))
    eventually(lambda: apps.list_namespaced_replica_set("bulk").items)
    apps.delete_namespaced_deployment("fg", "bulk", propagation_policy="Foreground")
    eventually(
        lambda: (
            not apps.list_namespaced_replica_set("bulk").items
            and not apps.list_namespaced_deployment("bulk").items
        )
    )


def test_label_syntax_and_annotation_size_are_validated(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": "badlabel", "labels": {"app": "has spaces"}}}
        )
    assert err.value.status == 422
    huge = {"kubectl.kubernetes.io/last-applied-configuration": "x" * (300 * 1024)}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": "huge", "annotations": huge}}
        )
    assert err.value.status == 422 and "metadata.annotations" in _status(err.value)["message"]
