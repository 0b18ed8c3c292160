"""Custom resources: 404 before their CRD, CRUD and validation after, DynamicClient discovery."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from sim.k8s import ApiServer
from sim.k8s.operators.crds import SCALED_OBJECT
from tests.sim_k8s.conftest import eventually

GROUP, VERSION, PLURAL = "keda.sh", "v1alpha1", "scaledobjects"


def scaled_object(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ScaledObject",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"name": "web"},
            "triggers": [{"type": "prometheus", "metadata": {"threshold": "10"}}],
            **spec,
        },
    }


def test_custom_resource_before_its_crd_is_404(
    custom: client.CustomObjectsApi, api_client: client.ApiClient
) -> None:
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, scaled_object("early")
        )
    assert err.value.status == 404
    assert json.loads(err.value.body)["kind"] == "Status"
    with pytest.raises(ResourceNotFoundError):
        DynamicClient(api_client).resources.get(
            api_version=f"{GROUP}/{VERSION}", kind="ScaledObject"
        )


def test_crd_registration_crud_validation_and_patches(
    custom: client.CustomObjectsApi, api_client: client.ApiClient, cluster: ApiServer
) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(SCALED_OBJECT)
    crd = eventually(lambda: ext.read_custom_resource_definition("scaledobjects.keda.sh"))
    assert any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)
    made = custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, scaled_object("so1", minReplicaCount=1)
    )
    assert made["metadata"]["generation"] == 1 and made["metadata"]["uid"]
    # invalid: wrong type, enum and missing required field -> 422 with causes
    bad = scaled_object("bad", minReplicaCount="one")
    bad["spec"]["triggers"][0]["metricType"] = "Sometimes"
    del bad["spec"]["scaleTargetRef"]
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, bad)
    status = json.loads(err.value.body)
    assert err.value.status == 422
    fields = {c["field"] for c in status["details"]["causes"]}
    assert {"spec.minReplicaCount", "spec.triggers[0].metricType", "spec.scaleTargetRef"} <= fields
    # merge patch bumps generation; strategic merge is refused for custom resources
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "so1", {"spec": {"maxReplicaCount": 4}}
    )
    assert patched["metadata"]["generation"] == 2 and patched["spec"]["maxReplicaCount"] == 4
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "so1",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert err.value.status == 415
    # unknown fields are pruned, as structural schemas demand
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "so1", {"spec": {"bogus": 1}}
    )
    assert (
        "bogus"
        not in custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "so1")["spec"]
    )
    # status is a subresource: the main resource ignores it
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "so1", {"status": {"hpaName": "x"}}
    )
    assert "hpaName" not in (
        custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "so1").get("status")
        or {}
    )
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "so1", {"status": {"hpaName": "x"}}
    )
    assert (
        custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "so1")["status"][
            "hpaName"
        ]
        == "x"
    )
    # DynamicClient discovers it now
    so = DynamicClient(api_client).resources.get(
        api_version=f"{GROUP}/{VERSION}", kind="ScaledObject"
    )
    assert [i.metadata.name for i in so.get(namespace="default").items] == ["so1"]
    # deleting the CRD removes the resource and its objects
    ext.delete_custom_resource_definition("scaledobjects.keda.sh")
    with pytest.raises(ApiException) as err:
        custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "so1")
    assert err.value.status == 404


def test_dynamic_client_builtin_kinds(api_client: client.ApiClient) -> None:
    dyn = DynamicClient(api_client)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cms.create(body={"metadata": {"name": "dyn"}, "data": {"a": "1"}}, namespace="default")
    got = cms.get(name="dyn", namespace="default")
    assert got.data.a == "1"
    cms.patch(
        body={"data": {"b": "2"}},
        name="dyn",
        namespace="default",
        content_type="application/merge-patch+json",
    )
    assert dict(cms.get(name="dyn", namespace="default").data) == {"a": "1", "b": "2"}
    stale = got.to_dict()
    stale["data"] = {"c": "3"}
    with pytest.raises(Exception) as err:
        cms.replace(body=stale, namespace="default")
    assert getattr(err.value, "status", None) == 409
    cms.delete(name="dyn", namespace="default")
