"""OIDC/JWT bearer tokens: verified against the issuer's keys; the role comes from a claim.

A JWT's signature, issuer, audience and expiry are checked; the principal is `oidc:<sub>` and
its role the configured claim (viewer when absent or unknown, never more).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import orjson
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry

from gateway.auth import RANK, Principal
from gateway.errors import ApiError

_JWKS_TTL = 300.0


class OidcVerifier:
    def __init__(self, issuer: str, audience: str, jwks: str, role_claim: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self.jwks = jwks
        self.role_claim = role_claim
        self._keys: KeySet | None = None
        self._fetched = 0.0
        self._claims = JWTClaimsRegistry(
            iss={"essential": True, "value": issuer},
            aud={"essential": True, "value": audience},
            exp={"essential": True},
            sub={"essential": True},
        )

    async def _key_set(self) -> KeySet:
        if self._keys is not None and time.monotonic() - self._fetched < _JWKS_TTL:
            return self._keys
        if self.jwks.startswith("https://"):
            async with httpx.AsyncClient(timeout=5) as client:
                document: Any = (await client.get(self.jwks)).raise_for_status().json()
        else:
            document = orjson.loads(self.jwks)
        self._keys = KeySet.import_key_set(document)
        self._fetched = time.monotonic()
        return self._keys

    async def verify(self, token: str) -> Principal:
        try:
            decoded = jwt.decode(token, await self._key_set())
            self._claims.validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            raise ApiError(
                401,
                "unauthorized",
                f"the JWT was refused: {exc}",
                hint=f"get a fresh token from {self.issuer} for audience {self.audience}",
            ) from exc
        role = decoded.claims.get(self.role_claim)
        return Principal(f"oidc:{decoded.claims['sub']}", role if role in RANK else "viewer")
