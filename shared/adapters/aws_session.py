"""One boto3 session per process: every AWS client a service makes comes from it.

A boto3 session resolves credentials and loads service models once; clients made from one are
thread-safe, but making them is not (boto3's guide, "Multithreading or multiprocessing with
clients"), so `client` makes them under a lock. Region and endpoint are per client.

Every client made here spends from the account's AWS call budget (shared/aws_budget.py) once a
service has installed one (`use_budget`): botocore emits `before-send` before each HTTP attempt
(botocore/endpoint.py, `_do_get_response`; its own retries included) and `response-received`
with each attempt's parsed answer, errors included (`_get_response`), so a hook on those two
events covers every call path and every retry without touching the callers. The service and
operation go with each token (shared.aws_budget.PUBLISHED_LIMITS: an operation whose published
rate is below the account's spends from its own bucket too).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import boto3
import orjson
from botocore.config import Config
from botocore.loaders import JSONFileLoader, Loader
from botocore.retries.standard import ThrottledRetryableChecker

from shared.memory import compact_json

_lock = threading.Lock()
_session: boto3.session.Session | None = None

# The codes AWS services answer when they throttle a caller: botocore's own list, the one its
# standard and adaptive retry modes treat as throttling (botocore/retries/standard.py).
THROTTLING_CODES = frozenset(ThrottledRetryableChecker._THROTTLED_ERROR_CODES)


class CallBudget(Protocol):
    """What the hooks need of the budget (shared.aws_budget.AccountLimiter)."""

    def gate(
        self, region: str, service: str | None = None, operation: str | None = None
    ) -> None: ...

    def report_throttled(self, region: str) -> None: ...


_budget: CallBudget | None = None


def use_budget(budget: CallBudget | None) -> None:
    """Every AWS request of this process (clients made before or after) spends from `budget`;
    None stops it."""
    global _budget
    _budget = budget


# Members of a service model that only documentation reads (botocore's docs and help). They are
# about 40% of a parsed model: EC2's is 14.6 MB in memory with them, 8.8 MB without; SageMaker's
# 9.5 and 6.0.
DOCUMENTATION = ("documentation", "documentationUrl")


def without_documentation(node: Any) -> None:
    """Empty the documentation members of a parsed service model, in place (emptied, not
    removed: botocore reads a few of them by key, e.g. a context parameter's)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in DOCUMENTATION:
                if key in item:
                    item[key] = ""
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))


class PlainJSONFileLoader(JSONFileLoader):  # type: ignore[misc]  # botocore ships no types
    """botocore's model file loader, parsing into plain dicts (orjson) where botocore's own
    parses into OrderedDicts: a dict keeps its insertion order (Python 3.7+), and botocore
    reads its models only by key and in order. An OrderedDict costs about twice a dict, and a
    parsed model is tens of thousands of them: the models of cluster-svc's clients take 14 MB
    less resident memory this way (EC2's and SageMaker's most of it; docs/performance.md)."""

    def _load_file(self, full_path: str, open_method: Any) -> Any:
        # the one method of botocore's loader that parses (botocore/loaders.py); the same
        # answer, None, for a file that is not there
        if not os.path.isfile(full_path):
            return None
        with open_method(full_path, "rb") as fp:
            return orjson.loads(fp.read())


class CompactMapping(Mapping[str, Any]):
    """A mapping of parsed JSON values kept as compact JSON, each parsed when it is asked for:
    a service model's shapes and the endpoint data's services of each partition.

    botocore reads `shapes` only by name (`ShapeResolver.get_shape_by_name`, which builds a
    new Shape from the dict each time) or to list the names (`ServiceModel.shape_names`), and
    keeps the Shapes it built where it uses them (an operation's input and output, a
    structure's members, the error shapes), so a parsed dict is never needed twice. A process
    uses a few dozen of EC2's 4,421 shapes: the models of 10 of the clients cluster-svc makes
    trace to 17.2 MB instead of 27.2 (`tests/unit/test_aws_session.py` checks < 75%). The
    endpoint data (endpoints.json, 4 MB parsed) is read by service name too, as a client is
    made (`botocore.regions.EndpointResolver`: `in`, `[]`, `.get`), and a process makes
    clients of a dozen of its 305 services in the aws partition."""

    __slots__ = ("_json",)

    def __init__(self, shapes: Mapping[str, Any]) -> None:
        self._json = {name: compact_json(shape) for name, shape in shapes.items()}

    def __getitem__(self, name: str) -> Any:
        return orjson.loads(self._json[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._json)

    def __len__(self) -> int:
        return len(self._json)


class ModelLoader(Loader):  # type: ignore[misc]  # botocore ships no types
    """botocore's loader, keeping service models without their documentation, in plain dicts
    (`PlainJSONFileLoader`) and their shapes compact (`CompactMapping`), and the endpoint
    data's services compact: a process holds every model it makes a client of for its whole
    life (the loader's cache), and requests, answers, validation and errors never read the
    documentation."""

    FILE_LOADER_CLASS = PlainJSONFileLoader

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._stripped: set[tuple[str, str | None]] = set()
        self._compacted: set[str] = set()

    def load_service_model(
        self, service_name: str, type_name: str, api_version: str | None = None
    ) -> Any:
        model = super().load_service_model(service_name, type_name, api_version)
        if type_name == "service-2" and (service_name, api_version) not in self._stripped:
            without_documentation(model)  # the cached model itself: stripped once
            model["shapes"] = CompactMapping(model.get("shapes", {}))
            self._stripped.add((service_name, api_version))
        return model

    def load_data_with_path(self, name: str) -> Any:
        data, path = super().load_data_with_path(name)  # cached: compacted once
        if name == "endpoints" and name not in self._compacted:
            for partition in data.get("partitions", []):
                partition["services"] = CompactMapping(partition.get("services", {}))
            self._compacted.add(name)
        return data, path


def session() -> boto3.session.Session:
    """The process's session, made on first use (credentials from the environment, an
    instance profile or AWS_PROFILE, as boto3 finds them); its models without documentation
    (`ModelLoader`)."""
    global _session
    with _lock:
        if _session is None:
            made = boto3.session.Session()
            default: Loader = made._session.get_component("data_loader")
            made._session.register_component(
                "data_loader",
                ModelLoader(
                    extra_search_paths=default.search_paths, include_default_search_paths=False
                ),
            )
            _session = made
        return _session


def account_id(region: str, endpoint_url: str | None = None) -> str:
    """The account the process's credentials belong to (STS GetCallerIdentity)."""
    sts = client("sts", region, endpoint_url)
    return str(sts.get_caller_identity()["Account"])


def _hooks(made: Any, region: str) -> None:
    service = str(made.meta.service_model.service_name)

    def before_send(event_name: str = "", **_: Any) -> None:
        budget = _budget
        if budget is not None:
            # the event is `before-send.<service id>.<operation>` (botocore/endpoint.py)
            budget.gate(region, service, event_name.rsplit(".", 1)[-1] or None)
        return None  # a value here would replace the HTTP response

    def received(parsed_response: Any = None, **_: Any) -> None:
        budget = _budget
        if budget is None or not isinstance(parsed_response, dict):
            return
        code = (parsed_response.get("Error") or {}).get("Code")
        if code in THROTTLING_CODES:
            budget.report_throttled(region)

    made.meta.events.register("before-send", before_send)
    made.meta.events.register("response-received", received)


def client(
    service: str,
    region: str,
    endpoint_url: str | None = None,
    config: Config | None = None,
    *,
    of: boto3.session.Session | None = None,
) -> Any:
    """A new client for `service` in `region`, of the process's session (or of `of`)."""
    made_from = of or session()
    with _lock:
        made = made_from.client(
            service, region_name=region, endpoint_url=endpoint_url, config=config
        )
    _hooks(made, region)
    return made
