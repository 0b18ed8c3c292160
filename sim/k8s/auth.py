"""EKS bearer tokens: `k8s-aws-v1.` + base64url(presigned STS GetCallerIdentity URL).

The emulator checks the token's shape and the cluster it names; it does not verify the AWS
signature (nothing here can call STS). `aws eks get-token` signs the `x-k8s-aws-id` header
rather than putting it in the URL: such tokens are accepted when the header is among the
signed ones, and the cluster name is checked whenever the URL carries it.
"""

from __future__ import annotations

import base64
import hashlib
import time
from urllib.parse import parse_qs, urlencode, urlsplit

PREFIX = "k8s-aws-v1."


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


def check_token(token: str, cluster: str) -> str | None:
    """None if the token is acceptable for `cluster`, else why not."""
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
    return None
