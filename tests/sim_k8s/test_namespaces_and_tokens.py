"""Namespaces as the NamespaceLifecycle admission plugin and namespace validation keep them,
and service account tokens (TokenRequest: `kubectl create token`, then `kubectl auth whoami`
with the token), driven with kubectl and the official client."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from sim.k8s import ApiServer
from tests.sim_k8s.conftest import eventually

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return claims


# ---- namespaces --------------------------------------------------------------------------------


def test_a_namespace_name_is_a_dns_1123_label(kubectl: Kubectl) -> None:
    for bad in ("Team_A", "team.a", "team-", "a" * 64):
        done = kubectl("create", "namespace", bad, check=False)
        assert done.returncode != 0
        assert f'The Namespace "{bad}" is invalid' in done.stderr, done.stderr
        assert f'metadata.name: Invalid value: "{bad}": ' in done.stderr
    assert (
        "must be no more than 63 characters"
        in kubectl("create", "namespace", "a" * 64, check=False).stderr
    )
    assert (
        'metadata.name: Invalid value: "Team_A": a lowercase RFC 1123 label must consist of '
        "lower case alphanumeric characters or '-', and must start and end with an "
        "alphanumeric character"
    ) in kubectl("create", "namespace", "Team_A", check=False).stderr
    kubectl("create", "namespace", "team-a")
    kubectl("delete", "namespace", "team-a", "--wait=false")


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_the_system_namespaces_cannot_be_deleted(kubectl: Kubectl, name: str) -> None:
    done = kubectl("delete", "namespace", name, check=False)
    assert done.returncode != 0
    assert (
        f'Error from server (Forbidden): namespaces "{name}" is forbidden: '
        "this namespace may not be deleted"
    ) in done.stderr
    assert kubectl("get", "namespace", name, "-o", "jsonpath={.status.phase}").stdout == "Active"


def test_a_namespace_keeps_its_name(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    kubectl("create", "namespace", "keeps-name")
    try:
        current = core.read_namespace("keeps-name")
        assert current.metadata is not None
        current.metadata.name = "renamed"
        with pytest.raises(client.ApiException) as exc:
            core.replace_namespace("keeps-name", current)
        assert exc.value.status == 400
        assert (
            "the name of the object (renamed) does not match the name on the URL (keeps-name)"
            in str(exc.value.body)
        )
        kept = core.read_namespace("keeps-name").metadata
        assert kept is not None and kept.name == "keeps-name"
        with pytest.raises(client.ApiException):
            core.read_namespace("renamed")
    finally:
        kubectl("delete", "namespace", "keeps-name", "--wait=false")


def test_nothing_new_in_a_terminating_namespace(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    kubectl("create", "namespace", "closing")
    # a finalizer keeps the namespace's content, so the namespace stays Terminating
    core.create_namespaced_config_map(
        "closing",
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="held", finalizers=["example.com/hold"])
        ),
    )
    kubectl("delete", "namespace", "closing", "--wait=false")
    eventually(
        lambda: (
            kubectl("get", "namespace", "closing", "-o", "jsonpath={.status.phase}").stdout
            == "Terminating"
        )
    )
    done = kubectl("create", "configmap", "late", "-n", "closing", check=False)
    assert done.returncode != 0
    assert (
        'configmaps "late" is forbidden: unable to create new '
        "content in namespace closing because it is being terminated"
    ) in done.stderr
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_secret("closing", client.V1Secret(metadata={"name": "late"}))
    assert exc.value.status == 403
    status = json.loads(str(exc.value.body))
    assert status["reason"] == "Forbidden"
    assert status["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace closing is being terminated",
            "field": "metadata.namespace",
        }
    ]
    # what is already there may still change: the finalizer comes off, and the namespace goes
    kubectl("patch", "configmap", "held", "-n", "closing", "--type=merge",
            "-p", '{"metadata":{"finalizers":null}}')  # fmt: skip
    eventually(
        lambda: kubectl("get", "namespace", "closing", check=False).returncode != 0, timeout=20
    )


def test_nothing_in_a_namespace_that_does_not_exist(
    kubectl: Kubectl, api_client: client.ApiClient
) -> None:
    done = kubectl("create", "configmap", "lost", "-n", "nowhere", check=False)
    assert done.returncode != 0
    assert 'namespaces "nowhere" not found' in done.stderr
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(api_client).create_namespaced_config_map(
            "nowhere", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="lost"))
        )
    assert exc.value.status == 404


def test_a_service_name_is_a_dns_1035_label(core: client.CoreV1Api) -> None:
    service = client.V1Service(
        metadata=client.V1ObjectMeta(name="1st-api"),
        spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)]),
    )
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_service("default", service)
    assert exc.value.status == 422
    assert "a DNS-1035 label must consist of lower case alphanumeric characters" in str(
        exc.value.body
    )


# ---- service account tokens --------------------------------------------------------------------


def _as(kubectl: Kubectl, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return kubectl("--token", token, *args, check=False)


def test_create_token_then_whoami_as_the_service_account(
    kubectl: Kubectl, cluster: ApiServer
) -> None:
    kubectl("create", "serviceaccount", "builder")
    token = kubectl("create", "token", "builder").stdout.strip()
    claims = _claims(token)
    assert claims["iss"] == cluster.oidc_issuer
    assert claims["sub"] == "system:serviceaccount:default:builder"
    assert claims["aud"] == ["https://kubernetes.default.svc"]
    assert claims["exp"] - claims["iat"] == 3600
    account = kubectl("get", "serviceaccount", "builder", "-o", "json").stdout
    assert claims["kubernetes.io"]["serviceaccount"] == {
        "name": "builder",
        "uid": json.loads(account)["metadata"]["uid"],
    }

    who = _as(kubectl, token, "auth", "whoami", "-o", "json")
    assert who.returncode == 0, who.stderr
    user = json.loads(who.stdout)["status"]["userInfo"]
    assert user["username"] == "system:serviceaccount:default:builder"
    assert user["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert _as(kubectl, token, "get", "serviceaccounts").returncode == 0
    # the cluster creator is still who the EKS token stands for
    assert "kubernetes-admin" in kubectl("auth", "whoami").stdout

    # the account goes: so does its token
    kubectl("delete", "serviceaccount", "builder")
    refused = _as(kubectl, token, "get", "pods")
    assert refused.returncode != 0
    assert "Unauthorized" in refused.stderr


def test_token_duration_audience_and_bound_object(kubectl: Kubectl) -> None:
    kubectl("create", "serviceaccount", "runner")
    short = kubectl("create", "token", "runner", "--duration=5m", check=False)
    assert short.returncode != 0
    assert "may not specify a duration less than 10 minutes" in short.stderr
    assert "spec.expirationSeconds" in short.stderr
    two_hours = kubectl("create", "token", "runner", "--duration=2h").stdout.strip()
    claims = _claims(two_hours)
    assert claims["exp"] - claims["iat"] == 7200

    missing = kubectl("create", "token", "nobody", check=False)
    assert missing.returncode != 0
    assert 'serviceaccounts "nobody" not found' in missing.stderr

    # a token for another audience (IRSA's STS) is not one for the API server
    sts = kubectl("create", "token", "runner", "--audience=sts.amazonaws.com").stdout.strip()
    assert _claims(sts)["aud"] == ["sts.amazonaws.com"]
    assert "Unauthorized" in _as(kubectl, sts, "get", "pods").stderr

    # bound to a pod: it must exist, and the token ends with it
    unbound = kubectl("create", "token", "runner", "--bound-object-kind=Pod",
                      "--bound-object-name=absent", check=False)  # fmt: skip
    assert unbound.returncode != 0
    assert 'pods "absent" not found' in unbound.stderr
    kubectl("run", "holder", "--image=busybox:1.36", "--restart=Never", "--", "sleep", "3600")
    bound = kubectl("create", "token", "runner", "--bound-object-kind=Pod",
                    "--bound-object-name=holder").stdout.strip()  # fmt: skip
    pod = json.loads(kubectl("get", "pod", "holder", "-o", "json").stdout)
    assert _claims(bound)["kubernetes.io"]["pod"] == {
        "name": "holder",
        "uid": pod["metadata"]["uid"],
    }
    who = json.loads(_as(kubectl, bound, "auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"] == ["holder"]
    kubectl("delete", "pod", "holder", "--wait=true", "--grace-period=0", "--force")
    assert "Unauthorized" in _as(kubectl, bound, "get", "pods").stderr
    kubectl("delete", "serviceaccount", "runner")
