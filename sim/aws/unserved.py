"""Operations in a service's model that neither moto nor the simulation answers.

moto dispatches the JSON and query protocols by the operation's name: its response class has a
method per operation it implements, and any other raises NotImplementedError, which its Flask
app turns into an HTML 500 page that no SDK can parse (moto/core/responses.py,
BaseResponse.call_action). Such an operation is answered here, before moto, in the service's
own error shape: 501 NotImplemented, the status HTTP gives a server that "does not support the
functionality required to fulfill the request" (RFC 9110, 15.6.2), and the code S3 answers for
functionality it does not implement (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html).
Botocore does not retry a 501, so a caller learns at once what the simulation cannot do.
"""

from __future__ import annotations

import importlib
from functools import cache

from moto.core.responses import BaseResponse
from moto.core.utils import camelcase_to_underscores, method_names_from_class

from sim.aws.errors import AwsError

# the protocols moto dispatches by operation name (REST protocols route by URL instead)
_BY_NAME = ("json", "query", "ec2")
_DISPATCH = ("call_action", "_dispatch", "_get_action")


@cache
def _moto_methods(service: str) -> frozenset[str] | None:
    """The operation methods of moto's response class for `service` (None: not known)."""
    module = service.replace("-", "")
    try:
        urls = importlib.import_module(f"moto.{module}.urls")
    except ImportError:
        return None
    owners = {getattr(view, "__self__", None) for view in urls.url_paths.values()}
    owners.discard(None)
    if len(owners) != 1:
        return None
    owner = owners.pop()
    if not isinstance(owner, type) or not issubclass(owner, BaseResponse):
        return None
    # a class that dispatches its own way (autoscaling, dynamodb, batch...) cannot be told
    if any(getattr(owner, name) is not getattr(BaseResponse, name) for name in _DISPATCH):
        return None
    return frozenset(method_names_from_class(owner))


def unserved(service: str, operation: str, protocol: str) -> AwsError | None:
    """The answer for an operation moto does not implement, if `service` is one moto
    dispatches by name; None when moto has it (or cannot be told)."""
    if protocol not in _BY_NAME:
        return None
    methods = _moto_methods(service)
    if methods is None or camelcase_to_underscores(operation) in methods:
        return None
    return AwsError(
        "NotImplemented",
        f"The simulated AWS does not implement {service} {operation}: moto has no handler "
        "for it and the simulation adds none.",
        501,
    )
