"""The identity stages through the IAM adapter against the simulated AWS, and the issuer
thumbprint read from a real TLS endpoint."""

from __future__ import annotations

import hashlib
import socket
import ssl
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import trustme

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.iam import IamIdentity, root_thumbprint
from cluster_svc.domain import identity
from cluster_svc.domain.identity import EKS_ROOT_CA_THUMBPRINT, POLICY_NAME
from shared.errors import PermanentError
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.cluster_network.conftest import my_inventory
from tests.cluster_network.helpers import by_name, create_command, delete_command, drive

CREATES = (
    "CreateRole",
    "PutRolePolicy",
    "UpdateAssumeRolePolicy",
    "CreateOpenIDConnectProvider",
    "AddClientIDToOpenIDConnectProvider",
)


def counts(sim: SimulatedAws) -> dict[str, int]:
    return {op: len(sim.call_log("iam", op)) for op in CREATES}


async def create(
    iam: IamIdentity, command: dict[str, Any], issuer: str
) -> dict[str, dict[str, Any]]:
    stages = by_name(identity.create_stages(iam))
    eks = {"eks_cluster": {"oidc_issuer": issuer}}
    return {
        name: (await drive(stages[name], command, eks)).outputs
        for name in ("eks_role", "execution_role", "oidc_provider")
    }


async def test_roles_and_provider_as_iam_shows_them_and_delete_restores_the_account(
    sim: SimulatedAws, iam: IamIdentity
) -> None:
    before = my_inventory(sim)
    name = f"id-{uuid.uuid4().hex[:6]}"
    issuer = f"https://oidc.eks.us-east-1.amazonaws.com/id/{uuid.uuid4().hex.upper()}"
    command = create_command(name)
    outputs = await create(iam, command, issuer)
    client = aws_client(sim, "iam")

    eks_role = client.get_role(RoleName=f"hyperpilot-{name}-eks")["Role"]
    assert outputs["eks_role"]["role_arn"] == eks_role["Arn"]
    trust = eks_role["AssumeRolePolicyDocument"]
    assert trust["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com"}
    tags = {
        t["Key"]: t["Value"] for t in client.list_role_tags(RoleName=eks_role["RoleName"])["Tags"]
    }
    assert tags == {"managed-by": "hyperpilot", "hyperpilot:cluster": name}
    exec_role = client.get_role(RoleName=f"hyperpilot-{name}-exec")["Role"]
    assert exec_role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"
    }
    policy = client.get_role_policy(RoleName=exec_role["RoleName"], PolicyName=POLICY_NAME)
    statements = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    assert statements["ReadClusterBucket"]["Resource"] == f"arn:aws:s3:::hyperpilot-{name}-data/*"
    assert f":444455556666:cluster/{name}" in statements["JoinEksCluster"]["Resource"]
    eks_policy = client.get_role_policy(RoleName=eks_role["RoleName"], PolicyName=POLICY_NAME)
    assert "ec2:CreateNetworkInterface" in str(eks_policy["PolicyDocument"])

    provider = client.get_open_id_connect_provider(
        OpenIDConnectProviderArn=outputs["oidc_provider"]["provider_arn"]
    )
    assert provider["ClientIDList"] == ["sts.amazonaws.com"]
    # The simulated issuer's host does not resolve here: the documented EKS root CA is used.
    assert provider["ThumbprintList"] == [EKS_ROOT_CA_THUMBPRINT]
    assert outputs["oidc_provider"]["created"] is True

    made = counts(sim)
    assert await create(iam, command, issuer) == outputs
    assert counts(sim) == made

    delete = delete_command(name, outputs)
    for stage in identity.delete_stages(iam):
        await drive(stage, delete)
    assert my_inventory(sim) == before
    assert len(sim.call_log("iam", "DeleteRolePolicy")) >= 2


async def test_a_foreign_role_with_the_name_is_refused_and_kept(
    sim: SimulatedAws, iam: IamIdentity
) -> None:
    name = f"id-{uuid.uuid4().hex[:6]}"
    client = aws_client(sim, "iam")
    client.create_role(RoleName=f"hyperpilot-{name}-eks", AssumeRolePolicyDocument="{}")
    stage = by_name(identity.create_stages(iam))["eks_role"]
    try:
        with pytest.raises(PermanentError) as err:
            await drive(stage, create_command(name))
        assert err.value.code == "RoleNameTaken"
        puts = [c["params"].get("RoleName") for c in sim.call_log("iam", "PutRolePolicy")]
        assert f"hyperpilot-{name}-eks" not in puts
    finally:
        client.delete_role(RoleName=f"hyperpilot-{name}-eks")


@pytest.fixture
def tls_issuer() -> Iterator[tuple[str, int, trustme.CA]]:
    """An HTTPS endpoint whose certificate a private CA signed."""
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(server_context)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            try:
                with server_context.wrap_socket(connection, server_side=True) as tls:
                    tls.settimeout(1)
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield "localhost", port, ca
    finally:
        stop.set()
        thread.join(2)
        listener.close()


async def test_thumbprint_is_the_root_of_the_issuers_verified_chain(
    aws: AwsClients, tls_issuer: tuple[str, int, trustme.CA]
) -> None:
    host, port, ca = tls_issuer
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    root = hashlib.sha1(ssl.PEM_cert_to_DER_cert(ca.cert_pem.bytes().decode())).hexdigest()
    assert root_thumbprint(host, port, client_context) == root

    adapter = IamIdentity(aws, tls_context=client_context)
    assert await adapter.issuer_thumbprint(f"https://{host}:{port}/id/ABC") == root
    # Without trust in the private CA the chain cannot be verified: no thumbprint is guessed.
    assert root_thumbprint(host, port, ssl.create_default_context()) is None
    assert await adapter.issuer_thumbprint(f"http://{host}:{port}/id/ABC") is None
