"""STS rules moto does not keep, checked before moto answers.

AssumeRoleWithSAML: moto decodes the assertion and reads its Role attribute without checking it
is there, so an assertion that is not base64, not UTF-8, not XML or not a SAML 2.0 Response
with the Role and RoleSessionName attributes was a 500. STS refuses such an assertion with InvalidIdentityToken (400):
"The web identity token that was passed could not be validated by AWS" is the error the API
reference lists for it (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithSAML.html,
Errors), and the attributes it must carry are those of "Configure SAML assertions for the
authentication response" (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_create_saml_assertions.html).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from xml.etree import ElementTree

from sim.aws.errors import AwsError

_PROTOCOL = "{urn:oasis:names:tc:SAML:2.0:protocol}"
_ASSERTION = "{urn:oasis:names:tc:SAML:2.0:assertion}"
# the attributes an assertion for AWS must carry (the IAM page above: Role and RoleSessionName)
REQUIRED_ATTRIBUTES = (
    "https://aws.amazon.com/SAML/Attributes/Role",
    "https://aws.amazon.com/SAML/Attributes/RoleSessionName",
)


def _unreadable(why: str) -> AwsError:
    return AwsError("InvalidIdentityToken", f"Invalid SAML response: {why}.", 400)


def check_saml_assertion(params: dict[str, Any]) -> None:
    """Refuse an AssumeRoleWithSAML assertion STS could not read (raises AwsError)."""
    encoded = str(params.get("SAMLAssertion", ""))
    try:
        document = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise _unreadable("SAMLAssertion is not the base64 encoding of a UTF-8 document") from None
    try:
        root = ElementTree.fromstring(document)
    except ElementTree.ParseError as exc:
        raise _unreadable(f"the decoded SAMLAssertion is not XML ({exc})") from None
    if root.tag != f"{_PROTOCOL}Response":
        raise _unreadable("the document is not a SAML 2.0 samlp:Response")
    named = {
        attribute.get("Name"): attribute.find(f"{_ASSERTION}AttributeValue")
        for attribute in root.findall(
            f"{_ASSERTION}Assertion/{_ASSERTION}AttributeStatement/{_ASSERTION}Attribute"
        )
    }
    for name in REQUIRED_ATTRIBUTES:
        value = named.get(name)
        if value is None or not (value.text or "").strip():
            raise _unreadable(f"the assertion has no {name} attribute with a value")


# (service, operation) -> a check of the parsed request, run after the model's validation
CHECKS = {("sts", "AssumeRoleWithSAML"): check_saml_assertion}
