"""Validation: built-in kinds against the real OpenAPI schemas, custom resources against their CRD.

Built-in schemas come from kubernetes-validate (the JSON schemas of each Kubernetes release);
custom resources are checked against the structural subset of openAPIV3Schema the API server
enforces (types, required, enum, bounds, patterns, maps, int-or-string, preserve-unknown-fields)
and get their `default`s applied, as the real server does.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

from sim.k8s.errors import ApiError, invalid
from sim.k8s.registry import ResourceType
from sim.k8s.selectors import match_label_selector

Cause = dict[str, str]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class BuiltinValidator:
    """Caches one jsonschema validator per kind and version (a schema load costs ~10 ms)."""

    def __init__(self, kubernetes_version: str) -> None:
        self.version = kubernetes_version
        self._cache: dict[tuple[str, str, bool], Any] = {}
        self._lock = threading.Lock()

    def _validator(self, api_version: str, kind: str, strict: bool) -> Any:
        cache_key = (api_version, kind, strict)
        with self._lock:
            if cache_key in self._cache:
                return self._cache[cache_key]
            versions = [
                v
                for v in kv_utils.all_versions()
                if kv_utils.major_minor(v) <= kv_utils.major_minor(self.version)
            ]
            version = versions[-1]
            schema_dir = f"v{version}-local" + ("-strict" if strict else "")
            gv = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
            try:
                schema = kv_utils.schema_contents(
                    f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{gv}.json", self.version
                )
            except FileNotFoundError:
                self._cache[cache_key] = None
                return None
            defs = kv_utils.schema_contents(
                f"kubernetes-json-schema/{schema_dir}/_definitions.json", self.version
            )
            registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
            registry = Resource.from_contents(defs) @ registry
            validator = jsonschema.validators.Draft202012Validator(schema, registry=registry)
            self._cache[cache_key] = validator
            return validator

    def errors(self, obj: dict[str, Any], strict: bool) -> list[Cause]:
        validator = self._validator(obj["apiVersion"], obj["kind"], strict)
        if validator is None:
            return []
        causes = []
        for err in validator.iter_errors(obj):
            causes.extend(_causes_from(err))
        return causes


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _causes_from(err: jsonschema.ValidationError) -> list[Cause]:
    if err.context:  # anyOf/oneOf: report the most specific branch
        best = jsonschema.exceptions.best_match(err.context)
        if best is not None:
            return _causes_from(best)
    path = _path(err.absolute_path)
    if err.validator == "required":
        missing = re.findall(r"'([^']+)' is a required property", err.message)
        name = missing[0] if missing else "?"
        return [
            {
                "reason": "FieldValueRequired",
                "message": "Required value",
                "field": f"{path}.{name}" if path else name,
            }
        ]
    if err.validator == "additionalProperties":
        extra = re.findall(r"'([^']+)'", err.message)
        return [
            {"reason": "FieldValueInvalid", "message": f'unknown field "{e}"', "field": path}
            for e in extra
        ]
    return [
        {"reason": "FieldValueInvalid", "message": f"Invalid value: {err.message}", "field": path}
    ]


_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# apimachinery's pkg/util/validation messages (IsDNS1123Label, IsDNS1123Subdomain, IsDNS1035Label)
_NAME_RULES = {
    "label": (
        _DNS_LABEL,
        63,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-',"
        " and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc',"
        " regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ),
    "subdomain": (
        _DNS_SUBDOMAIN,
        253,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-'"
        " or '.', and must start and end with an alphanumeric character (e.g. 'example.com',"
        " regex used for validation is"
        " '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ),
    "dns1035": (
        _DNS_1035,
        63,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with"
        " an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or"
        " 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    ),
}


def check_name(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """metadata.name as upstream validates it: a namespace's is an RFC 1123 label
    (ValidateNamespaceName), a service's a DNS-1035 label (ValidateServiceName), most others'
    an RFC 1123 subdomain; each broken rule is one cause, as `field.ErrorList` has it."""
    name = obj.get("metadata", {}).get("name")
    if not name:
        return [
            {
                "reason": "FieldValueRequired",
                "message": "Required value: name or generateName is required",
                "field": "metadata.name",
            }
        ]
    if rt.plural in ("events",) or rt.key in ("nodes",):
        return []
    rule = {"namespaces": "label", "services": "dns1035"}.get(rt.plural, "subdomain")
    pattern, longest, detail = _NAME_RULES[rule]
    problems = []
    if len(name) > longest:
        problems.append(f"must be no more than {longest} characters")
    if not pattern.match(name):
        problems.append(detail)
    return [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: {json.dumps(name)}: {problem}",
            "field": "metadata.name",
        }
        for problem in problems
    ]


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_KEY_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
MAX_ANNOTATIONS = 256 * 1024


def check_metadata(obj: dict[str, Any]) -> list[Cause]:
    """Label syntax and the annotation size limit (what big client-side applies run into)."""
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    for key, value in (meta.get("labels") or {}).items():
        prefix, _, name = str(key).rpartition("/")
        if (
            len(name) > 63
            or not _LABEL_KEY_NAME.match(name)
            or (prefix and not _DNS_SUBDOMAIN.match(prefix))
        ):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {key!r}: name part must consist of alphanumeric characters, '-', '_' or '.'",
                    "field": "metadata.labels",
                }
            )
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {value!r}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.' (at most 63)",
                    "field": "metadata.labels",
                }
            )
    annotations = meta.get("annotations") or {}
    size = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
    if size > MAX_ANNOTATIONS:
        causes.append(
            {
                "reason": "FieldValueTooLong",
                "message": f"Too long: must have at most {MAX_ANNOTATIONS} bytes",
                "field": "metadata.annotations",
            }
        )
    return causes


def semantic_checks(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """The few cross-field rules of the real API server that schemas cannot express."""
    causes: list[Cause] = []
    spec = obj.get("spec") or {}
    if rt.key in ("deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps"):
        selector = spec.get("selector")
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if isinstance(selector, dict):
            if not selector.get("matchLabels") and not selector.get("matchExpressions"):
                causes.append(
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: empty selector is invalid for deployment",
                        "field": "spec.selector",
                    }
                )
            elif not match_label_selector(selector, labels):
                causes.append(
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: `selector` does not match template `labels`",
                        "field": "spec.template.metadata.labels",
                    }
                )
        replicas = spec.get("replicas")
        if isinstance(replicas, int) and replicas < 0:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {replicas}: must be greater than or equal to 0",
                    "field": "spec.replicas",
                }
            )
    if rt.key == "poddisruptionbudgets.policy":
        causes += disruption_budget_causes(spec)
    pod_spec = None
    if rt.key == "pods":
        pod_spec = spec
    elif isinstance(spec.get("template"), dict):
        pod_spec = spec["template"].get("spec")
        prefix = "spec.template.spec"
    if rt.key == "pods":
        prefix = "spec"
    if isinstance(pod_spec, dict) and rt.builtin:
        containers = pod_spec.get("containers") or []
        if not containers:
            causes.append(
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": f"{prefix}.containers",
                }
            )
        for n, c in enumerate(containers):
            if isinstance(c, dict) and not c.get("image"):
                causes.append(
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value",
                        "field": f"{prefix}.containers[{n}].image",
                    }
                )
    return causes


_PERCENT = re.compile(r"^[0-9]+%$")


def disruption_budget_causes(spec: dict[str, Any]) -> list[Cause]:
    """A PodDisruptionBudget's budget as upstream's ValidatePodDisruptionBudgetSpec checks it
    (kubernetes/kubernetes pkg/apis/policy/validation/validation.go, with
    ValidatePositiveIntOrPercent and IsNotMoreThan100Percent of pkg/apis/apps/validation): at
    most one of minAvailable and maxUnavailable; each an integer >= 0 or a percentage <= 100%.
    The schema only says int-or-string; these are the API server's own rules."""
    causes: list[Cause] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        # upstream prints the whole spec as the bad value, then this detail
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {json.dumps(spec, sort_keys=True)}:"
                " minAvailable and maxUnavailable cannot be both set",
                "field": "spec",
            }
        )
    for name in ("minAvailable", "maxUnavailable"):
        value = spec.get(name)
        field = f"spec.{name}"
        if isinstance(value, str):
            if not _PERCENT.match(value):
                problem = "must be an integer or percentage (e.g '5%')"
            elif int(value[:-1]) > 100:
                problem = "must not be greater than 100%"
            else:
                continue
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {json.dumps(value)}: {problem}",
                    "field": field,
                }
            )
        elif isinstance(value, int) and not isinstance(value, bool) and value < 0:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {value}: must be greater than or equal to 0",
                    "field": field,
                }
            )
    return causes


def validate_object(
    rt: ResourceType,
    obj: dict[str, Any],
    builtin: BuiltinValidator,
    strict: bool = False,
    extra: list[Cause] | None = None,
) -> None:
    """Raise 422 with causes for an invalid object (and `extra` ones found by the caller); 400 for
    unknown fields under Strict."""
    name = obj.get("metadata", {}).get("name") or obj.get("metadata", {}).get("generateName", "")
    causes = check_name(rt, obj)
    if rt.builtin:
        if strict:
            unknown = [
                c
                for c in builtin.errors(obj, strict=True)
                if c["message"].startswith("unknown field")
            ]
            if unknown:
                fields = ", ".join(
                    f'unknown field "{c["field"]}.{c["message"].split(chr(34))[1]}"'
                    for c in unknown
                )
                raise ApiError(
                    400,
                    f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                    f"strict decoding error: {fields}",
                )
        causes += builtin.errors(obj, strict=False)
    elif rt.schema:
        causes += structural_errors(rt.schema, obj, "")
    causes += check_metadata(obj)
    causes += semantic_checks(rt, obj)
    causes += extra or []
    if causes:
        raise invalid(rt.kind, rt.group, name, causes)


def reject_unknown_fields(rt: ResourceType, obj: dict[str, Any]) -> None:
    """fieldValidation=Strict for a custom resource: unknown fields are a 400, not pruned."""
    if rt.schema is None:
        return
    unknown_paths = unknown_fields(rt.schema, obj, "")
    if unknown_paths:
        raise ApiError(
            400,
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown_paths),
        )


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES.get(kind, (object,)))


def structural_errors(schema: dict[str, Any], value: Any, path: str) -> list[Cause]:
    """Check `value` against a structural openAPIV3Schema; metadata/apiVersion/kind are skipped."""
    causes: list[Cause] = []
    here = path or "<root>"
    if value is None:
        if schema.get("nullable"):
            return []
        if path:
            return [
                {"reason": "FieldValueTypeInvalid", "message": "Invalid value: null", "field": here}
            ]
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            causes.append(
                {
                    "reason": "FieldValueTypeInvalid",
                    "message": f'Invalid value: "{value}": must be an integer or a string',
                    "field": here,
                }
            )
        return causes
    kind = schema.get("type")
    if kind and value is not None and not _type_ok(kind, value):
        return [
            {
                "reason": "FieldValueTypeInvalid",
                "message": f'Invalid value: "{type(value).__name__}": {here} in body must be of type {kind}',
                "field": here,
            }
        ]
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{e}"' for e in schema["enum"])
        causes.append(
            {
                "reason": "FieldValueNotSupported",
                "message": f"Unsupported value: {value!r}: supported values: {allowed}",
                "field": here,
            }
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {value}: {here} in body should be greater than or equal to {schema['minimum']}",
                    "field": here,
                }
            )
        if "maximum" in schema and value > schema["maximum"]:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {value}: {here} in body should be less than or equal to {schema['maximum']}",
                    "field": here,
                }
            )
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {value!r}: {here} in body should match '{schema['pattern']}'",
                    "field": here,
                }
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            causes.append(
                {
                    "reason": "FieldValueTooLong",
                    "message": f"Too long: may not be longer than {schema['maxLength']}",
                    "field": here,
                }
            )
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for req in schema.get("required") or []:
            if req not in value and not (not path and req in ("metadata", "apiVersion", "kind")):
                causes.append(
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value",
                        "field": f"{path}.{req}" if path else req,
                    }
                )
        for key, sub in value.items():
            if not path and key in ("metadata", "apiVersion", "kind"):
                continue
            child = f"{path}.{key}" if path else key
            if key in props:
                causes += structural_errors(props[key], sub, child)
            elif isinstance(schema.get("additionalProperties"), dict):
                causes += structural_errors(schema["additionalProperties"], sub, child)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        if "minItems" in schema and len(value) < schema["minItems"]:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {len(value)}: {here} in body should have at least {schema['minItems']} items",
                    "field": here,
                }
            )
        for n, item in enumerate(value):
            causes += structural_errors(schema["items"], item, f"{path}[{n}]")
    return causes


def unknown_fields(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    if schema.get("x-kubernetes-preserve-unknown-fields") or not isinstance(value, dict):
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [
                u
                for n, item in enumerate(value)
                for u in unknown_fields(schema["items"], item, f"{path}[{n}]")
            ]
        return []
    props = schema.get("properties")
    out = []
    for key, sub in value.items():
        if not path and key in ("metadata", "apiVersion", "kind"):
            continue
        child = f"{path}.{key}" if path else key
        if props is not None and key in props:
            out += unknown_fields(props[key], sub, child)
        elif isinstance(schema.get("additionalProperties"), dict):
            out += unknown_fields(schema["additionalProperties"], sub, child)
        elif props is not None and not schema.get("additionalProperties"):
            out.append(child)
    return out


def prune_and_default(schema: dict[str, Any], value: Any, root: bool = True) -> Any:
    """Apply schema defaults and drop unknown fields, as the API server does for custom resources."""
    if not isinstance(value, dict):
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [prune_and_default(schema["items"], i, False) for i in value]
        return value
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return value
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    result: dict[str, Any] = {}
    for key, sub in value.items():
        if root and key in ("metadata", "apiVersion", "kind"):
            result[key] = sub
        elif props is not None and key in props:
            result[key] = prune_and_default(props[key], sub, False)
        elif isinstance(extra, dict):
            result[key] = prune_and_default(extra, sub, False)
        elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields") or props is None:
            result[key] = sub
    for key, sub in (props or {}).items():
        if key not in result and "default" in sub:
            result[key] = prune_and_default(sub, sub["default"], False)
    return result
