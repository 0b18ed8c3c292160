"""The EKS bearer token: what `aws eks get-token` makes, renewed before EKS stops taking it
(cluster-svc's `eks_token`, the shared `EksTokens` and `api_client`)."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from cluster_svc.adapters.k8s import eks_token
from shared.adapters import eks_kube
from shared.adapters.eks_kube import ClusterEndpoint, EksTokens, api_client
from sim.k8s.auth import check_token


def session() -> boto3.session.Session:
    return boto3.session.Session(
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        region_name="us-west-2",
    )


def decode(token: str) -> str:
    raw = token.removeprefix("k8s-aws-v1.")
    assert "=" not in raw, "base64url without padding"
    return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()


def test_token_is_a_presigned_sts_get_caller_identity_url_signing_the_cluster_header() -> None:
    token = eks_token(session(), "training-a", "us-west-2")
    assert token.startswith("k8s-aws-v1.")
    url = urlsplit(decode(token))
    assert (url.scheme, url.hostname, url.path) == ("https", "sts.us-west-2.amazonaws.com", "/")
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query["Action"] == "GetCallerIdentity" and query["Version"] == "2011-06-15"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-Credential"].startswith("AKIDEXAMPLE/")
    assert query["X-Amz-Credential"].endswith("/us-west-2/sts/aws4_request")
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-SignedHeaders"].split(";") == ["host", "x-k8s-aws-id"]
    assert len(query["X-Amz-Signature"]) == 64
    # the emulated API server takes it for this cluster only
    assert check_token(token, "training-a") is None
    other = eks_token(session(), "training-b", "us-west-2")
    assert other != token


def test_tokens_are_reused_then_renewed_before_fifteen_minutes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []

    def fake(sess: boto3.session.Session, cluster: str, region: str, service: str) -> str:
        made.append(cluster)
        return f"k8s-aws-v1.token{len(made)}"

    monkeypatch.setattr(eks_kube, "eks_token", fake)
    now = [1000.0]
    tokens = EksTokens(session(), "c", "us-west-2", "cluster-svc", clock=lambda: now[0])
    assert tokens.token() == "k8s-aws-v1.token1"
    now[0] += 9 * 60
    assert tokens.token() == "k8s-aws-v1.token1"
    now[0] += 2 * 60  # 11 minutes after issue: renewed, well inside EKS's 15
    assert tokens.token() == "k8s-aws-v1.token2"
    assert eks_kube.RENEW_AFTER < 15 * 60


def test_api_client_carries_endpoint_ca_and_a_fresh_bearer_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    target = ClusterEndpoint(
        "c", "https://abc.gr7.us-west-2.eks.amazonaws.com", base64.b64encode(pem).decode()
    )
    now = [0.0]
    counter = iter(range(1, 10))
    monkeypatch.setattr(eks_kube, "eks_token", lambda *a: f"k8s-aws-v1.t{next(counter)}")
    tokens = EksTokens(session(), "c", "us-west-2", "cluster-svc", clock=lambda: now[0])
    api = api_client(target, tokens, tmp_path)
    config = api.configuration
    assert config.host == target.endpoint
    assert Path(config.ssl_ca_cert).read_bytes() == pem and config.verify_ssl
    assert config.auth_settings()["BearerToken"]["value"] == "Bearer k8s-aws-v1.t1"
    now[0] += 11 * 60
    assert config.auth_settings()["BearerToken"]["value"] == "Bearer k8s-aws-v1.t2"
    api.close()  # type: ignore[no-untyped-call]
