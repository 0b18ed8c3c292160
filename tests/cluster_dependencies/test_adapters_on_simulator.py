"""The Kubernetes and EKS add-on adapters against the simulator: unmodified boto3, and the
official Kubernetes client over HTTPS with the EKS token."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.eks_addons import EksAddons
from cluster_svc.adapters.k8s import EksKubeFactory, KubeClient
from cluster_svc.domain.components.base import ClusterAccess, KubeObject
from cluster_svc.domain.components.keda import SCALED_OBJECT_CRD
from shared.adapters import eks_kube
from shared.errors import PermanentError, TemporaryError
from sim.aws import SimulatedAws
from tests.cluster_dependencies.conftest import REGION


def access(cluster: dict[str, Any], name: str | None = None) -> ClusterAccess:
    return ClusterAccess(
        name or cluster["name"], cluster["endpoint"], cluster["certificateAuthority"]["data"]
    )


@pytest.fixture(scope="module")
def factory() -> Iterator[EksKubeFactory]:
    made = EksKubeFactory(REGION)
    yield made
    made.close()


@pytest.fixture
def kube(factory: EksKubeFactory, shared_cluster: dict[str, Any]) -> KubeClient:
    return factory(access(shared_cluster))


def config_map(name: str, data: dict[str, str]) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


async def test_apply_is_server_side_and_idempotent_get_and_delete(kube: KubeClient) -> None:
    name = f"cm-{uuid.uuid4().hex[:6]}"
    assert await kube.get("v1", "ConfigMap", name, "default") is None
    created = await kube.apply(config_map(name, {"a": "1"}))
    assert created["data"] == {"a": "1"}
    assert {m["manager"] for m in created["metadata"]["managedFields"]} == {"hyperpilot"}
    again = await kube.apply(config_map(name, {"a": "1"}))
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    changed = await kube.apply(config_map(name, {"a": "2"}))
    assert changed["data"] == {"a": "2"}
    found = await kube.get("v1", "ConfigMap", name, "default")
    assert found is not None and found["data"] == {"a": "2"}
    assert await kube.delete("v1", "ConfigMap", name, "default") is True
    assert await kube.delete("v1", "ConfigMap", name, "default") is False


async def test_a_dry_run_stores_nothing_a_merge_patch_changes_what_it_names_and_a_cluster_kind_lists(
    kube: KubeClient,
) -> None:
    name = f"cm-{uuid.uuid4().hex[:6]}"
    answered = await kube.apply(config_map(name, {"a": "1"}), dry_run=True)
    assert answered["data"] == {"a": "1"}
    assert await kube.get("v1", "ConfigMap", name, "default") is None
    await kube.apply(config_map(name, {"a": "1", "b": "2"}))
    patched = await kube.merge_patch("v1", "ConfigMap", name, "default", {"data": {"a": "3"}})
    assert patched["data"] == {"a": "3", "b": "2"}
    label = f"hp-test-{uuid.uuid4().hex[:6]}"
    namespace: KubeObject = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": label, "labels": {"hp-test": label}},
    }
    await kube.apply(namespace)  # cluster-scoped: no namespace in its path
    assert await kube.serves("v1", "Namespace") and not await kube.serves("v1", "NoSuchKind")
    listed = await kube.list_objects("v1", "Namespace", f"hp-test={label}")
    assert [n["metadata"]["name"] for n in listed] == [label]
    assert await kube.delete("v1", "Namespace", label) is True
    assert await kube.delete("v1", "ConfigMap", name, "default") is True


async def test_custom_kinds_are_absent_until_their_crd_is_served(kube: KubeClient) -> None:
    scaled: KubeObject = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "router", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"name": "router"},
            "triggers": [{"type": "cpu", "metadata": {}}],
        },
    }
    assert await kube.get("keda.sh/v1alpha1", "ScaledObject", "router", "default") is None
    with pytest.raises(TemporaryError) as err:
        await kube.apply(scaled)
    assert err.value.code == "KindNotServed"
    crd = await kube.apply(SCALED_OBJECT_CRD)
    assert crd["metadata"]["name"] == "scaledobjects.keda.sh"
    await kube.wait(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "scaledobjects.keda.sh",
        None,
        lambda obj: (
            obj is not None and any(c["type"] == "Established" for c in obj["status"]["conditions"])
        ),
        timeout=10,
    )
    made = await kube.apply(scaled)  # discovery picks the new kind up
    assert made["spec"]["scaleTargetRef"] == {"name": "router"}
    bad = {**scaled, "metadata": {"name": "bad", "namespace": "default"}, "spec": {"triggers": []}}
    with pytest.raises(PermanentError) as invalid:
        await kube.apply(bad)
    assert invalid.value.code == "KubernetesInvalid"
    assert "scaleTargetRef" in invalid.value.message


async def test_a_refused_token_fails_with_the_access_entry_hint(
    shared_cluster: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eks_kube, "eks_token", lambda *args: "not-an-eks-token")
    refused = EksKubeFactory(REGION)
    with pytest.raises(PermanentError) as err:
        await refused(access(shared_cluster)).get("v1", "Namespace", "default")
    assert err.value.code == "KubernetesForbidden"
    assert err.value.hint == (
        "give cluster-svc's IAM principal an EKS access entry with AmazonEKSClusterAdminPolicy"
        " (the access_entries stage), then retry"
    )
    refused.close()


def test_api_failures_are_classified_with_the_servers_message() -> None:
    def failure(status: int) -> ApiException:
        exc = ApiException(status=status, reason="Reason")
        exc.body = '{"kind": "Status", "message": "the server says why"}'
        return exc

    throttled = KubeClient.error(failure(429), "get Pod default/p")
    assert isinstance(throttled, TemporaryError) and "the server says why" in throttled.message
    assert isinstance(KubeClient.error(failure(503), "x"), TemporaryError)
    assert isinstance(KubeClient.error(ConnectionError("refused"), "x"), TemporaryError)
    forbidden = KubeClient.error(failure(403), "apply ClusterRole r")
    assert isinstance(forbidden, PermanentError) and forbidden.code == "KubernetesForbidden"
    assert forbidden.message == "apply ClusterRole r: the server says why"


async def test_eks_addons_adapter(sim: SimulatedAws, shared_cluster: dict[str, Any]) -> None:
    addons = EksAddons(AwsClients(REGION, sim.endpoint_url))
    name = shared_cluster["name"]
    assert await addons.describe(name, "cert-manager") is None
    offered = await addons.versions("cert-manager", "1.32")
    assert "v1.18.2-eksbuild.2" in offered and len(offered) >= 2
    await addons.create(name, "cert-manager", "v1.18.2-eksbuild.2", "token-1")
    await addons.create(name, "cert-manager", "v1.18.2-eksbuild.2", "token-2")  # exists: no error
    assert len(sim.call_log("eks", "CreateAddon")) >= 1
    state = await addons.describe(name, "cert-manager")
    assert state is not None and state.managed and state.version == "v1.18.2-eksbuild.2"
    assert state.status in ("CREATING", "ACTIVE")
    with pytest.raises(PermanentError) as err:
        await addons.create(name, "aws-fsx-csi-driver", "v0.0.1-nope", "token-3")
    assert "not supported" in err.value.message and "aws-fsx-csi-driver" in err.value.message
    await addons.delete(name, "cert-manager")
    await addons.delete(name, "never-installed")  # already gone is fine
