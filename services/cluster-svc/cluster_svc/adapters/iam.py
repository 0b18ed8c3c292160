"""IAM roles, inline policies and OIDC providers: the `identity.Iam` port over boto3.

The OIDC provider's thumbprint is the SHA-1 of the root certificate of the issuer's verified TLS
chain (what eksctl and the EKS user guide compute); the TLS handshake runs in a thread with a
short timeout, and a host that cannot be reached yields None so the caller falls back.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.identity import OidcProvider, Role
from shared.errors import PermanentError, StageError

NOT_FOUND = frozenset({"NoSuchEntity", "NoSuchEntityException"})
# The next step for refusals a user can act on (AWS's own message is kept as the message).
HINTS = {
    "AccessDenied": "grant Hyperpilot's credentials the IAM permission named in the message "
    "(iam:CreateRole, iam:PutRolePolicy, iam:CreateOpenIDConnectProvider, ...), then retry",
    "LimitExceeded": "delete unused IAM roles or OIDC providers, or raise the IAM quota named "
    "in the message, then retry",
    "MalformedPolicyDocument": "this is a defect in Hyperpilot's policy; report it with the message",
    "DeleteConflict": "something else still uses it (an instance profile or a policy); remove "
    "that, then retry",
}


def _tags(raw: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw or []}


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _document(value: Any) -> dict[str, Any]:
    """IAM answers policy documents URL-encoded JSON; boto3 usually decodes them already."""
    if isinstance(value, dict):
        return value
    text = urllib.parse.unquote(str(value))
    decoded: dict[str, Any] = json.loads(text)
    return decoded


def _verified_chain(sock: ssl.SSLSocket) -> list[bytes]:
    """DER certificates of the verified chain, leaf first (public API from Python 3.13)."""
    public = getattr(sock, "get_verified_chain", None)
    if public is not None:
        return [bytes(c) for c in public()]
    native = sock._sslobj  # type: ignore[attr-defined]
    encoding = getattr(ssl, "ENCODING_DER", None) or ssl._ssl.ENCODING_DER  # type: ignore[attr-defined]
    return [c.public_bytes(encoding) for c in native.get_verified_chain()]


def root_thumbprint(
    host: str, port: int = 443, context: ssl.SSLContext | None = None, timeout: float = 3.0
) -> str | None:
    """SHA-1 (hex) of the last certificate of the host's verified chain; None when unreachable
    or unverifiable."""
    context = context or ssl.create_default_context()
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            chain = _verified_chain(tls)
    except (OSError, ssl.SSLError, ValueError):
        return None
    return hashlib.sha1(chain[-1]).hexdigest() if chain else None


class IamIdentity:
    """The identity stages' view of IAM (global) and of the issuer's TLS endpoint."""

    def __init__(
        self,
        aws: AwsClients,
        *,
        tls_context: ssl.SSLContext | None = None,
        thumbprint_timeout: float = 3.0,
    ) -> None:
        self.aws = aws
        self.tls_context = tls_context
        self.thumbprint_timeout = thumbprint_timeout

    async def _call(self, operation: str, **params: Any) -> Any:
        try:
            return await self.aws.call("iam", operation, **params)
        except StageError as exc:
            if exc.hint is None and exc.code in HINTS:
                exc.hint = HINTS[exc.code]
            raise

    async def _gone_ok(self, operation: str, **params: Any) -> bool:
        try:
            await self._call(operation, **params)
        except PermanentError as exc:
            if exc.code in NOT_FOUND:
                return False
            raise
        return True

    async def _pages(self, operation: str, key: str, **params: Any) -> list[Any]:
        """All pages of a list call; a missing role reads as an empty list."""
        items: list[Any] = []
        try:
            while True:
                page = await self._call(operation, **params)
                items.extend(page.get(key, []))
                if not page.get("IsTruncated"):
                    return items
                params["Marker"] = page["Marker"]
        except PermanentError as exc:
            if exc.code in NOT_FOUND:
                return []
            raise

    # ---- roles -----------------------------------------------------------------------------

    async def role(self, name: str) -> Role | None:
        try:
            raw = (await self._call("get_role", RoleName=name))["Role"]
        except PermanentError as exc:
            if exc.code in NOT_FOUND:
                return None
            raise
        tags = _tags(raw.get("Tags"))
        if not tags:
            tags = _tags(await self._pages("list_role_tags", "Tags", RoleName=name))
        return Role(raw["RoleName"], raw["Arn"], _document(raw["AssumeRolePolicyDocument"]), tags)

    async def create_role(
        self, name: str, trust: Mapping[str, Any], description: str, tags: Mapping[str, str]
    ) -> Role:
        raw = (
            await self._call(
                "create_role",
                RoleName=name,
                AssumeRolePolicyDocument=json.dumps(trust),
                Description=description,
                Tags=_tag_list(tags),
            )
        )["Role"]
        return Role(raw["RoleName"], raw["Arn"], dict(trust), dict(tags))

    async def update_trust(self, name: str, trust: Mapping[str, Any]) -> None:
        await self._call(
            "update_assume_role_policy", RoleName=name, PolicyDocument=json.dumps(trust)
        )

    async def inline_policy(self, role: str, policy: str) -> dict[str, Any] | None:
        try:
            raw = await self._call("get_role_policy", RoleName=role, PolicyName=policy)
        except PermanentError as exc:
            if exc.code in NOT_FOUND:
                return None
            raise
        return _document(raw["PolicyDocument"])

    async def inline_policy_names(self, role: str) -> list[str]:
        return [
            str(n) for n in await self._pages("list_role_policies", "PolicyNames", RoleName=role)
        ]

    async def put_inline_policy(self, role: str, policy: str, document: Mapping[str, Any]) -> None:
        await self._call(
            "put_role_policy", RoleName=role, PolicyName=policy, PolicyDocument=json.dumps(document)
        )

    async def delete_inline_policy(self, role: str, policy: str) -> bool:
        return await self._gone_ok("delete_role_policy", RoleName=role, PolicyName=policy)

    async def attached_policy_arns(self, role: str) -> list[str]:
        attached = await self._pages(
            "list_attached_role_policies", "AttachedPolicies", RoleName=role
        )
        return [str(p["PolicyArn"]) for p in attached]

    async def detach_policy(self, role: str, policy_arn: str) -> bool:
        return await self._gone_ok("detach_role_policy", RoleName=role, PolicyArn=policy_arn)

    async def delete_role(self, name: str) -> bool:
        """Removes the role from any instance profile first (IAM refuses otherwise)."""
        profiles = await self._pages(
            "list_instance_profiles_for_role", "InstanceProfiles", RoleName=name
        )
        for profile in profiles:
            await self._gone_ok(
                "remove_role_from_instance_profile",
                InstanceProfileName=profile["InstanceProfileName"],
                RoleName=name,
            )
        return await self._gone_ok("delete_role", RoleName=name)

    # ---- OIDC providers --------------------------------------------------------------------

    async def oidc_provider(self, url: str) -> OidcProvider | None:
        listed = await self._call("list_open_id_connect_providers")
        suffix = f":oidc-provider/{url}"
        for entry in listed.get("OpenIDConnectProviderList", []):
            arn = str(entry["Arn"])
            if not arn.endswith(suffix):
                continue
            try:
                raw = await self._call("get_open_id_connect_provider", OpenIDConnectProviderArn=arn)
            except PermanentError as exc:
                if exc.code in NOT_FOUND:
                    return None
                raise
            return OidcProvider(
                arn, url, tuple(raw.get("ClientIDList", [])), _tags(raw.get("Tags"))
            )
        return None

    async def create_oidc_provider(
        self, url: str, client_ids: list[str], thumbprints: list[str], tags: Mapping[str, str]
    ) -> str:
        raw = await self._call(
            "create_open_id_connect_provider",
            Url=f"https://{url}",
            ClientIDList=client_ids,
            ThumbprintList=thumbprints,
            Tags=_tag_list(tags),
        )
        return str(raw["OpenIDConnectProviderArn"])

    async def add_client_id(self, arn: str, client_id: str) -> None:
        await self._call(
            "add_client_id_to_open_id_connect_provider",
            OpenIDConnectProviderArn=arn,
            ClientID=client_id,
        )

    async def delete_oidc_provider(self, arn: str) -> bool:
        return await self._gone_ok("delete_open_id_connect_provider", OpenIDConnectProviderArn=arn)

    async def issuer_thumbprint(self, issuer_url: str) -> str | None:
        parsed = urllib.parse.urlsplit(issuer_url)
        if parsed.scheme != "https" or not parsed.hostname:
            return None
        return await asyncio.to_thread(
            root_thumbprint,
            parsed.hostname,
            parsed.port or 443,
            self.tls_context,
            self.thumbprint_timeout,
        )
