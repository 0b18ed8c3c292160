"""Diagnostics reads of a cluster's Kubernetes API: events, pods, pod logs (current or previous).

One definition of each parameter and its rule, used by the gateway's query parameters, the MCP
tools' arguments and workload-svc, which answers the reads (`qry.workload.kube_events`,
`qry.workload.pods`, `qry.workload.pod_logs`). Reads only: nothing here changes a cluster.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.spec import Spec
from shared.contracts.workloads import NAMESPACE
from shared.validation import RuleViolation

# A namespace is a DNS label; `*` means every namespace.
NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
NAMESPACE_OR_ALL_PATTERN = r"^(\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$"
ALL_NAMESPACES = "*"
# A pod is a DNS subdomain; a container a DNS label.
POD_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
CONTAINER_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
# The object an event is about: a kind (Pod, Node, HyperPodPyTorchJob) and its name. Names of
# some kinds (nodes, RBAC objects) go beyond DNS subdomains; a field selector takes neither `,`
# nor `=` nor spaces.
KIND_PATTERN = r"^[A-Za-z][A-Za-z0-9]{0,62}$"
OBJECT_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9_.:]{0,251}[A-Za-z0-9])?$"
EventType = Literal["Normal", "Warning"]

DEFAULT_EVENTS = 100
MAX_EVENTS = 1000
DEFAULT_TAIL = 500
MAX_TAIL = 5000
MAX_SELECTOR = 1024

_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_PREFIX = r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/"
_KEY = re.compile(rf"^({_LABEL_PREFIX})?{_LABEL_NAME}$")
_VALUE = re.compile(rf"^({_LABEL_NAME})?$")
_SET = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQUALITY = re.compile(r"^(?P<key>[^=!\s]+)\s*(?P<op>==|!=|=)\s*(?P<value>[^=!\s]*)$")
SELECTOR_HINT = (
    "use a Kubernetes label selector: key=value, key!=value, key in (a,b), key notin (a,b),"
    " key or !key, joined with commas (e.g. app=web,tier in (api,worker))"
)


def _terms(selector: str) -> list[str]:
    """Split on the commas that separate terms (not those inside a set's parentheses)."""
    terms, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise RuleViolation(
                    f"selector {selector!r} closes a parenthesis it never opened", SELECTOR_HINT
                )
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    if depth:
        raise RuleViolation(f"selector {selector!r} leaves a parenthesis open", SELECTOR_HINT)
    terms.append(current.strip())
    return terms


def _key(key: str, selector: str) -> None:
    if not _KEY.match(key):
        raise RuleViolation(
            f"{key!r} in selector {selector!r} is not a label key",
            "a key is a name of up to 63 letters, digits, '-', '_' or '.', optionally prefixed"
            " by a DNS subdomain and '/' (e.g. app.kubernetes.io/name)",
        )


def _value(value: str, selector: str) -> None:
    if not _VALUE.match(value):
        raise RuleViolation(
            f"{value!r} in selector {selector!r} is not a label value",
            "a value is empty or up to 63 letters, digits, '-', '_' or '.', starting and ending"
            " with a letter or digit",
        )


def check_label_selector(selector: str) -> str:
    """The selector as given when it parses as the API server would parse it; else why not."""
    if len(selector) > MAX_SELECTOR:
        raise RuleViolation(
            f"selector is {len(selector)} characters long", f"use at most {MAX_SELECTOR}"
        )
    if not selector.strip():
        return ""
    for term in _terms(selector):
        if not term:
            raise RuleViolation(f"selector {selector!r} has an empty term", SELECTOR_HINT)
        if match := _SET.match(term):
            _key(match["key"], selector)
            values = [v.strip() for v in match["values"].split(",")]
            if not any(values):
                raise RuleViolation(
                    f"{term!r} in selector {selector!r} lists no value", SELECTOR_HINT
                )
            for value in values:
                _value(value, selector)
        elif match := _EQUALITY.match(term):
            _key(match["key"], selector)
            _value(match["value"], selector)
        elif term.startswith("!"):
            _key(term[1:].strip(), selector)
        elif re.match(r"^\S+$", term):
            _key(term, selector)
        else:
            raise RuleViolation(f"{term!r} in selector {selector!r} is not a term", SELECTOR_HINT)
    return selector


class KubeEventsQuery(Spec):
    """Kubernetes events of a cluster, newest last."""

    cluster: str = Field(pattern=NAME_PATTERN)
    namespace: str | None = Field(
        None, pattern=NAMESPACE_OR_ALL_PATTERN, description="omitted or *: every namespace"
    )
    kind: str | None = Field(None, pattern=KIND_PATTERN, description="the object's kind, e.g. Pod")
    object: str | None = Field(None, pattern=OBJECT_PATTERN, description="the object's name")
    type: EventType | None = None
    limit: int = Field(DEFAULT_EVENTS, ge=1, le=MAX_EVENTS)


class PodsQuery(Spec):
    """The pods of a namespace (or every namespace) matching a label selector."""

    cluster: str = Field(pattern=NAME_PATTERN)
    namespace: str = Field(NAMESPACE, pattern=NAMESPACE_OR_ALL_PATTERN)
    selector: str = Field("", max_length=MAX_SELECTOR)

    @field_validator("selector")
    @classmethod
    def _selector(cls, value: str) -> str:
        return check_label_selector(value)


class PodLogsQuery(Spec):
    """The last lines of one container's log: the running instance's, or (previous) the one
    before its last restart."""

    cluster: str = Field(pattern=NAME_PATTERN)
    namespace: str = Field(NAMESPACE, pattern=NAMESPACE_PATTERN)
    pod: str = Field(pattern=POD_PATTERN)
    container: str | None = Field(None, pattern=CONTAINER_PATTERN)
    tail: int = Field(DEFAULT_TAIL, ge=1, le=MAX_TAIL)
    previous: bool = False
