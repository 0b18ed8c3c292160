"""Operations the product calls that moto's handlers lack, added to moto's own response
classes so they answer over moto's state in the service's own wire format.

IAM AddClientIDToOpenIDConnectProvider and RemoveClientIDFromOpenIDConnectProvider (cluster-svc
adds `sts.amazonaws.com` to an EKS cluster's existing OIDC provider): moto had no handler, so
the call was an HTML 500. As the IAM API reference describes them, both are idempotent (adding a
client ID already there, or removing one that is not, succeeds), an unknown provider is
NoSuchEntity, and a provider holds at most 100 client IDs
(https://docs.aws.amazon.com/IAM/latest/APIReference/API_AddClientIDToOpenIDConnectProvider.html,
https://docs.aws.amazon.com/IAM/latest/APIReference/API_RemoveClientIDFromOpenIDConnectProvider.html,
"IAM object quotas" in https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.core.responses import EmptyResult
from moto.iam.exceptions import LimitExceededException
from moto.iam.responses import IamResponse

CLIENT_IDS_PER_PROVIDER = 100


def _add_client_id(self: Any) -> EmptyResult:
    provider = self.backend.get_open_id_connect_provider(
        self._get_param("OpenIDConnectProviderArn")
    )
    client_id = self._get_param("ClientID")
    if client_id not in provider.client_id_list:
        if len(provider.client_id_list) >= CLIENT_IDS_PER_PROVIDER:
            raise LimitExceededException(
                f"Cannot exceed quota for ClientIdsPerOpenIdConnectProvider: "
                f"{CLIENT_IDS_PER_PROVIDER}"
            )
        provider.client_id_list.append(client_id)
    return EmptyResult()


def _remove_client_id(self: Any) -> EmptyResult:
    provider = self.backend.get_open_id_connect_provider(
        self._get_param("OpenIDConnectProviderArn")
    )
    client_id = self._get_param("ClientID")
    if client_id in provider.client_id_list:
        provider.client_id_list.remove(client_id)
    return EmptyResult()


ADDITIONS: dict[type, dict[str, Callable[..., Any]]] = {
    IamResponse: {
        "add_client_id_to_open_id_connect_provider": _add_client_id,
        "remove_client_id_from_open_id_connect_provider": _remove_client_id,
    },
}


def install() -> None:
    """Give moto's response classes the operations above (once; moto's own win if it has them)."""
    for owner, methods in ADDITIONS.items():
        for name, method in methods.items():
            if not hasattr(owner, name):
                setattr(owner, name, method)
