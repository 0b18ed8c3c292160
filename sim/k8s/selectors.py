"""Label selectors (equality- and set-based) and field selectors, as the API server parses them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sim.k8s.errors import ApiError

Predicate = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*$")


def _split_terms(selector: str) -> list[str]:
    """Split on commas outside parentheses."""
    terms, depth, current = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        terms.append(current)
    return [t for t in terms if t.strip()]


def _label_term(term: str) -> Callable[[dict[str, str]], bool]:
    if m := _SET_RE.match(term):
        key, op, raw = m.groups()
        values = {v.strip() for v in raw.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _EQ_RE.match(term):
        key, op, value = m.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if m := _EXISTS_RE.match(term):
        neg, key = m.groups()
        if neg:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise ApiError(400, f"unable to parse requirement: invalid label selector: {term!r}")


def parse_label_selector(selector: str | None) -> Predicate:
    if not selector:
        return lambda obj: True
    terms = [_label_term(t) for t in _split_terms(selector)]

    def match(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(t(labels) for t in terms)

    return match


def match_label_selector(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A structured `LabelSelector` (matchLabels + matchExpressions) against a label map.

    An empty selector matches everything, as in the API; a missing one matches nothing.
    """
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    return all(match_expression(e, labels) for e in selector.get("matchExpressions") or [])


def match_expression(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def selector_string(selector: dict[str, Any]) -> str:
    """Render a structured selector the way `status.selector` / Scale report it."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key = expr["operator"], expr["key"]
        if op in ("In", "NotIn"):
            parts.append(f"{key} {op.lower()} ({','.join(expr.get('values') or [])})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def _field_value(obj: dict[str, Any], path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


# The field labels each kind's registry strategy declares (GetAttrs / ToSelectableFields in
# kubernetes/kubernetes pkg/registry/<group>/<kind>/strategy.go, and the field label conversion
# funcs of pkg/apis/<group>/v1/conversion.go); every kind has metadata.name and .namespace.
_COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
_EVENT_FIELDS = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)
SELECTABLE_FIELDS: dict[str, frozenset[str]] = {
    "pods": frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        }
    ),
    "events": _EVENT_FIELDS,
    "events.events.k8s.io": frozenset(
        {
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        }
    ),
    "secrets": frozenset({"type"}),
    "nodes": frozenset({"spec.unschedulable"}),
    "namespaces": frozenset({"status.phase"}),
    "services": frozenset({"spec.clusterIP", "spec.type"}),
    "replicationcontrollers": frozenset({"status.replicas"}),
    "replicasets.apps": frozenset({"status.replicas"}),
    "jobs.batch": frozenset({"status.successful"}),
    "certificatesigningrequests.certificates.k8s.io": frozenset({"spec.signerName"}),
}


def check_field_selector(kind_key: str, field_selector: str | None) -> None:
    """400 for a field the kind cannot be selected by, in upstream's words (the field label
    conversion func's error; kubectl prefixes `Unable to find "<gvr>" that match ...`)."""
    if not field_selector:
        return
    allowed = _COMMON_FIELDS | SELECTABLE_FIELDS.get(kind_key, frozenset())
    for term in _split_terms(field_selector):
        path = term.split("!=" if "!=" in term else "=", 1)[0].strip()
        if "=" in term and path not in allowed:
            raise ApiError(400, f"field label not supported: {path}")


def parse_field_selector(selector: str | None) -> Predicate:
    if not selector:
        return lambda obj: True
    terms: list[tuple[str, bool, str]] = []
    for term in _split_terms(selector):
        if "!=" in term:
            path, value = term.split("!=", 1)
            terms.append((path.strip(), False, value.strip()))
        elif "==" in term:
            path, value = term.split("==", 1)
            terms.append((path.strip(), True, value.strip()))
        elif "=" in term:
            path, value = term.split("=", 1)
            terms.append((path.strip(), True, value.strip()))
        else:
            raise ApiError(400, f"invalid selector: '{selector}'; can't understand '{term}'")

    def match(obj: dict[str, Any]) -> bool:
        return all((_field_value(obj, p) == v) == eq for p, eq, v in terms)

    return match
