"""EKS bearer tokens: `k8s-aws-v1.` + base64url(presigned STS GetCallerIdentity URL).

The emulator checks the token's shape and the cluster it is for. `aws eks get-token` (and
boto3's signer) sign the `x-k8s-aws-id` header instead of putting the cluster in the URL; EKS
learns the cluster by having STS check the signature with its own name in that header. The
emulator does the same check itself (SigV4, without calling STS) when it knows the secret of
the token's access key (the simulated world's credentials); a token signed with a key it does
not know is accepted on its shape. A cluster named in the URL (`make_token`) is compared as is.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from urllib.parse import parse_qs, parse_qsl, quote, urlencode, urlsplit

PREFIX = "k8s-aws-v1."
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def make_token(cluster: str, region: str = "us-east-1", access_key: str = "AKIAEXAMPLESIM") -> str:
    """A token of the shape `aws eks get-token` produces, naming `cluster` in its URL."""
    amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    query = {
        "Action": "GetCallerIdentity",
        "Version": "2011-06-15",
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{access_key}/{amz_date[:8]}/{region}/sts/aws4_request",
        "X-Amz-Date": amz_date,
        "X-Amz-Expires": "60",
        "X-Amz-SignedHeaders": "host;x-k8s-aws-id",
        "x-k8s-aws-id": cluster,
    }
    query["X-Amz-Signature"] = hashlib.sha256(urlencode(query).encode()).hexdigest()
    url = f"https://sts.{region}.amazonaws.com/?{urlencode(query)}"
    return PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def _sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sigv4_signature(url: str, headers: dict[str, str], secret: str) -> str:
    """The SigV4 signature of a presigned GET `url` with an empty body."""
    parts = urlsplit(url)
    params = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "X-Amz-Signature"
    ]
    query = dict(params)
    canonical_query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(params)
    )
    signed = query.get("X-Amz-SignedHeaders", "host").split(";")
    canonical_headers = "".join(f"{h}:{headers[h].strip()}\n" for h in signed)
    canonical = "\n".join(
        [
            "GET",
            parts.path or "/",
            canonical_query,
            canonical_headers,
            ";".join(signed),
            EMPTY_SHA256,
        ]
    )
    scope = query["X-Amz-Credential"].split("/", 1)[1]
    date, region, service, _ = scope.split("/")
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            query["X-Amz-Date"],
            scope,
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = _sign(
        _sign(_sign(_sign(f"AWS4{secret}".encode(), date), region), service), "aws4_request"
    )
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def check_token(token: str, cluster: str, secrets: dict[str, str] | None = None) -> str | None:
    """None if the token is acceptable for `cluster`, else why not.

    `secrets` maps access key ids to secret keys the emulator may verify signatures with.
    """
    if not token.startswith(PREFIX):
        return "not an EKS token"
    raw = token[len(PREFIX) :]
    try:
        url = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return "token is not base64url"
    parts = urlsplit(url)
    if parts.scheme != "https" or not (parts.hostname or "").startswith("sts."):
        return "token does not name an STS endpoint"
    query = {k.lower(): v[0] for k, v in parse_qs(parts.query).items()}
    if query.get("action") != "GetCallerIdentity":
        return "token is not a GetCallerIdentity request"
    signed = query.get("x-amz-signedheaders", "").lower().split(";")
    if "x-k8s-aws-id" not in signed:
        return "x-k8s-aws-id is not signed"
    named = query.get("x-k8s-aws-id")
    if named is not None and named != cluster:
        return f"token is for cluster {named!r}"
    access_key = query.get("x-amz-credential", "").split("/", 1)[0]
    secret = (secrets or {}).get(access_key)
    if named is None and secret is not None:
        try:
            expected = sigv4_signature(
                url, {"host": parts.hostname or "", "x-k8s-aws-id": cluster}, secret
            )
        except (KeyError, ValueError):
            return "token is not a valid presigned request"
        if not hmac.compare_digest(expected, query.get("x-amz-signature", "")):
            return "signature does not match this cluster (token for another cluster?)"
    return None
