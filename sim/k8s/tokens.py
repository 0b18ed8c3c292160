"""Service account tokens: the TokenRequest subresource (`kubectl create token <sa>`) and the
authentication of the tokens it issues.

As kube-apiserver does it (pkg/registry/core/serviceaccount/storage/token.go, the TokenRequest
validation of pkg/apis/authentication/validation, the claims of pkg/serviceaccount/claims.go):
a token is an RS256 JWT from the cluster's issuer (on EKS, the cluster's OIDC issuer URL) for
`system:serviceaccount:<namespace>:<name>`, with the requested audiences (the API server's own,
`https://kubernetes.default.svc`, when none is asked for), at least 10 minutes and at most 2^32
seconds long (1 hour by default), optionally bound to a Pod, Secret or Node that must exist
(with the given uid). The API server accepts such a token while it has not expired, names its
audience, and its service account (and bound object) still exist with the same uid; the caller
is then the service account, in groups `system:serviceaccounts`,
`system:serviceaccounts:<namespace>` and `system:authenticated`.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey

from sim.k8s.errors import ApiError, not_found
from sim.k8s.store import Obj

if TYPE_CHECKING:
    from sim.k8s.store import Store

API_AUDIENCE = "https://kubernetes.default.svc"
DEFAULT_SECONDS = 3600
MIN_SECONDS = 600  # "may not specify a duration less than 10 minutes"
MAX_SECONDS = 1 << 32  # "may not specify a duration larger than 2^32 seconds"
_BINDABLE = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}


def _invalid(name: str, field: str, value: Any, detail: str) -> ApiError:
    message = f"{field}: Invalid value: {value!r}: {detail}".replace("'", '"')
    return ApiError(
        422,
        f'TokenRequest.authentication.k8s.io "{name}" is invalid: {message}',
        reason="Invalid",
        details={
            "name": name,
            "group": "authentication.k8s.io",
            "kind": "TokenRequest",
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}],
        },
    )


class ServiceAccountTokens:
    """Issues and checks one cluster's service account tokens."""

    def __init__(self, store: Store, issuer: str) -> None:
        self.store = store
        self.issuer = issuer
        self._key: RSAKey | None = None
        self._lock = threading.Lock()

    def _signing_key(self) -> RSAKey:
        with self._lock:  # made on first use: an RSA key costs tens of milliseconds
            if self._key is None:
                kid = uuid.uuid4().hex[:16]
                self._key = RSAKey.generate_key(2048, parameters={"kid": kid}, private=True)
            return self._key

    def issue(self, namespace: str, name: str, body: Obj) -> Obj:
        """POST .../serviceaccounts/<name>/token: a TokenRequest with its status filled in."""
        account = self.store.get("serviceaccounts", namespace, name)
        if account is None:
            raise not_found("serviceaccounts", "", name)
        spec = dict(body.get("spec") or {})
        seconds = spec.get("expirationSeconds")
        seconds = DEFAULT_SECONDS if seconds is None else seconds
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise _invalid(name, "spec.expirationSeconds", seconds, "must be an integer")
        if seconds < MIN_SECONDS:
            raise _invalid(
                name,
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration less than 10 minutes",
            )
        if seconds > MAX_SECONDS:
            raise _invalid(
                name,
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration larger than 2^32 seconds",
            )
        audiences = [str(a) for a in spec.get("audiences") or []] or [API_AUDIENCE]
        now = int(time.time())
        private: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": account["metadata"]["uid"]},
        }
        ref = spec.get("boundObjectRef")
        if ref:
            kind = str(ref.get("kind") or "")
            api_version = str(ref.get("apiVersion") or "v1")
            if kind not in _BINDABLE or api_version != "v1":
                raise ApiError(
                    400, f"cannot bind token to object of type {api_version}, Kind={kind}"
                )
            bound_ns = "" if kind == "Node" else namespace
            bound = self.store.get(_BINDABLE[kind], bound_ns, str(ref.get("name") or ""))
            if bound is None:
                raise not_found(_BINDABLE[kind], "", str(ref.get("name") or ""))
            uid = bound["metadata"]["uid"]
            if ref.get("uid") and ref["uid"] != uid:
                raise ApiError(
                    409,
                    f'Operation cannot be fulfilled on {kind} "{ref["name"]}": the UID in the '
                    f"bound object reference ({ref['uid']}) does not match the UID in record. "
                    "The object might have been deleted and then recreated",
                    reason="Conflict",
                )
            private[kind.lower()] = {"name": ref["name"], "uid": uid}
            spec["boundObjectRef"] = {**ref, "apiVersion": api_version, "uid": uid}
        claims = {
            "iss": self.issuer,
            "sub": f"system:serviceaccount:{namespace}:{name}",
            "aud": audiences,
            "iat": now,
            "nbf": now,
            "exp": now + seconds,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": private,
        }
        key = self._signing_key()
        token = jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)
        expires = datetime.fromtimestamp(now + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        created = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
            "spec": {**spec, "audiences": audiences, "expirationSeconds": seconds},
            "status": {"token": token, "expirationTimestamp": expires},
        }

    def user(self, token: str) -> dict[str, Any] | None:
        """The service account a token this cluster issued stands for, or None when the token
        is not one, is expired, is for another audience, or its account or bound object is
        gone."""
        if self._key is None or token.count(".") != 2:
            return None
        try:
            claims = jwt.decode(token, self._key, algorithms=["RS256"]).claims
        except (JoseError, ValueError):
            return None
        now = time.time()
        audiences = claims.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else audiences or []
        if claims.get("iss") != self.issuer or API_AUDIENCE not in audiences:
            return None
        if not claims.get("nbf", 0) - 60 <= now < claims.get("exp", 0):
            return None
        private = claims.get("kubernetes.io") or {}
        namespace = private.get("namespace", "")
        account = private.get("serviceaccount") or {}
        found = self.store.get("serviceaccounts", namespace, account.get("name", ""))
        if found is None or found["metadata"]["uid"] != account.get("uid"):
            return None
        extra: dict[str, list[str]] = {
            "authentication.kubernetes.io/credential-id": [f"JTI={claims.get('jti', '')}"]
        }
        for kind, plural in _BINDABLE.items():
            bound = private.get(kind.lower())
            if not bound:
                continue
            obj = self.store.get(plural, "" if kind == "Node" else namespace, bound["name"])
            if obj is None or obj["metadata"]["uid"] != bound["uid"]:
                return None
            if kind in ("Pod", "Node"):
                extra[f"authentication.kubernetes.io/{kind.lower()}-name"] = [bound["name"]]
                extra[f"authentication.kubernetes.io/{kind.lower()}-uid"] = [bound["uid"]]
        return {
            "username": f"system:serviceaccount:{namespace}:{account['name']}",
            "uid": account["uid"],
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            ],
            "extra": extra,
        }
