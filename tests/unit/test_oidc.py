import json
import time

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from gateway.errors import ApiError
from gateway.oidc import OidcVerifier

ISSUER, AUDIENCE = "https://idp.example.com", "hyperpilot"


@pytest.fixture(scope="module")
def key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)


def _verifier(key: RSAKey) -> OidcVerifier:
    jwks = json.dumps({"keys": [key.as_dict(private=False)]})
    return OidcVerifier(ISSUER, AUDIENCE, jwks, "hyperpilot_role")


def _token(key: RSAKey, **claims: object) -> str:
    base = {
        "sub": "alice",
        "iss": ISSUER,
        "aud": AUDIENCE,
        "exp": int(time.time()) + 300,
        "hyperpilot_role": "operator",
    }
    base.update(claims)
    return jwt.encode({"alg": "RS256", "kid": "k1"}, base, key)


async def test_a_valid_jwt_gives_its_subject_and_role(key: RSAKey) -> None:
    principal = await _verifier(key).verify(_token(key))
    assert (principal.name, principal.role) == ("oidc:alice", "operator")


async def test_an_unknown_role_claim_is_only_a_viewer(key: RSAKey) -> None:
    principal = await _verifier(key).verify(_token(key, hyperpilot_role="root"))
    assert principal.role == "viewer"


@pytest.mark.parametrize(
    "claims",
    [{"aud": "someone-else"}, {"iss": "https://evil.example.com"}, {"exp": int(time.time()) - 10}],
)
async def test_wrong_audience_issuer_or_expired_is_refused(
    key: RSAKey, claims: dict[str, object]
) -> None:
    with pytest.raises(ApiError) as refused:
        await _verifier(key).verify(_token(key, **claims))
    assert refused.value.status == 401


async def test_a_token_signed_by_another_key_is_refused(key: RSAKey) -> None:
    other = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)
    with pytest.raises(ApiError):
        await _verifier(key).verify(_token(other))
