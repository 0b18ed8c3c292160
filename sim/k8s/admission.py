"""Upstream's validation rules that schemas cannot express: what may change on update, quantity
syntax and the rules of extended resources.

Each rule names the upstream function it follows (kubernetes/kubernetes pkg/apis/*/validation).
Messages are upstream's text, so the errors a user sees here are those of a real API server.
"""

from __future__ import annotations

from typing import Any

import orjson

from sim.k8s.errors import ApiError
from sim.k8s.quantity import FORMAT_WRONG, parse
from sim.k8s.registry import ResourceType

Obj = dict[str, Any]
Cause = dict[str, str]

_WORKLOADS = ("deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps")
_TEMPLATED = (*_WORKLOADS, "jobs.batch", "podtemplates")

# pkg/apis/core/validation/validation.go ValidatePodUpdate: the one message for any other change
POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)"
)
IMMUTABLE = "field is immutable"


def _cause(reason: str, field: str, message: str) -> Cause:
    return {"reason": reason, "field": field, "message": message}


def _go_value(value: Any) -> str:
    """How field.Invalid prints a bad value: strings quoted, numbers bare, the rest as JSON."""
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return "null"
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _label_selector(selector: Any) -> str:
    """%#v of a metav1.LabelSelector, as ValidateImmutableField's message prints it."""
    sel = selector if isinstance(selector, dict) else {}
    labels = sel.get("matchLabels")
    exprs = sel.get("matchExpressions")
    labels_s = (
        "map[string]string{" + ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items())) + "}"
        if labels
        else "map[string]string(nil)"
    )
    exprs_s = (
        "[]v1.LabelSelectorRequirement{"
        + ", ".join(
            f'v1.LabelSelectorRequirement{{Key:"{e.get("key")}", Operator:"{e.get("operator")}", '
            "Values:[]string{" + ", ".join(f'"{v}"' for v in e.get("values") or []) + "}}"
            for e in exprs
        )
        + "}"
        if exprs
        else "[]v1.LabelSelectorRequirement(nil)"
    )
    return f"v1.LabelSelector{{MatchLabels:{labels_s}, MatchExpressions:{exprs_s}}}"


def _immutable(field: str, old: Any, new: Any, shown: str | None = None) -> list[Cause]:
    """apimachinery ValidateImmutableField: `<field>: Invalid value: <new>: field is immutable`."""
    if old == new:
        return []
    return [
        _cause(
            "FieldValueInvalid",
            field,
            f"Invalid value: {shown if shown is not None else _go_value(new)}: {IMMUTABLE}",
        )
    ]


# ---- create and update: quantities and resource requirements --------------------------------


def _pod_specs(rt: ResourceType, obj: Obj) -> list[tuple[str, Obj]]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    if rt.key == "pods":
        return [("spec", spec)]
    if rt.key in _TEMPLATED:
        inner = (spec.get("template") or {}).get("spec") if rt.key != "podtemplates" else None
        return [("spec.template.spec", inner)] if isinstance(inner, dict) else []
    if rt.key == "cronjobs.batch":
        inner = (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get(
            "spec"
        )
        return [("spec.jobTemplate.spec.template.spec", inner)] if isinstance(inner, dict) else []
    return []


def _quantity_maps(rt: ResourceType, obj: Obj) -> list[Any]:
    """Every map of quantities a built-in kind carries (resource.Quantity fields)."""
    maps: list[Any] = []
    for _, pod_spec in _pod_specs(rt, obj):
        maps.append(pod_spec.get("overhead"))
        for group in ("initContainers", "containers"):
            for c in pod_spec.get(group) or []:
                resources = c.get("resources") if isinstance(c, dict) else None
                if isinstance(resources, dict):
                    maps += [resources.get("requests"), resources.get("limits")]
    spec = _spec(obj)
    if rt.key == "persistentvolumeclaims":
        resources = spec.get("resources") or {}
        maps += [resources.get("requests"), resources.get("limits")]
    elif rt.key == "persistentvolumes":
        maps.append(spec.get("capacity"))
    elif rt.key == "resourcequotas":
        maps.append(spec.get("hard"))
    elif rt.key == "limitranges":
        for item in spec.get("limits") or []:
            if isinstance(item, dict):
                maps += [item.get(k) for k in ("max", "min", "default", "defaultRequest")]
    elif rt.key == "nodes":
        status = obj.get("status") or {}
        maps += [status.get("capacity"), status.get("allocatable")]
    return maps


def check_quantities(rt: ResourceType, obj: Obj) -> None:
    """resource.Quantity's UnmarshalJSON: a malformed quantity fails decoding, a 400 (not 422)."""
    if not rt.builtin:
        return
    for values in _quantity_maps(rt, obj):
        for value in (values or {}).values() if isinstance(values, dict) else ():
            try:
                parse(value)
            except ValueError:
                raise ApiError(
                    400,
                    f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                    f"{FORMAT_WRONG}",
                ) from None


def _overcommit_allowed(name: str) -> bool:
    """pkg/apis/core/v1/helper IsOvercommitAllowed: native resources except huge pages."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _canonical(value: Any) -> str:
    return str(value)


def resource_requirement_errors(rt: ResourceType, obj: Obj) -> list[Cause]:
    """core validation ValidateContainerResourceRequirements: requests <= limits, and an extended
    resource (nvidia.com/gpu, vpc.amazonaws.com/efa, ...) requested only with an equal limit."""
    causes: list[Cause] = []
    for prefix, pod_spec in _pod_specs(rt, obj):
        for group in ("initContainers", "containers"):
            for n, c in enumerate(pod_spec.get(group) or []):
                resources = (c.get("resources") if isinstance(c, dict) else None) or {}
                requests = resources.get("requests") or {}
                limits = resources.get("limits") or {}
                path = f"{prefix}.{group}[{n}].resources"
                for name, qty in requests.items():
                    req_path = f"{path}.requests[{name}]"
                    if name in limits:
                        limit = limits[name]
                        if parse(qty) != parse(limit) and not _overcommit_allowed(name):
                            causes.append(
                                _cause(
                                    "FieldValueInvalid",
                                    req_path,
                                    f'Invalid value: "{_canonical(qty)}": must be equal to '
                                    f"{name} limit of {_canonical(limit)}",
                                )
                            )
                        elif parse(qty) > parse(limit):
                            causes.append(
                                _cause(
                                    "FieldValueInvalid",
                                    req_path,
                                    f'Invalid value: "{_canonical(qty)}": must be less than or '
                                    f"equal to {name} limit of {_canonical(limit)}",
                                )
                            )
                    elif not _overcommit_allowed(name):
                        causes.append(
                            _cause(
                                "FieldValueRequired",
                                f"{path}.limits",
                                "Required value: Limit must be set for non overcommitable resources",
                            )
                        )
    return causes


# ---- update: what may change ----------------------------------------------------------------


def _pod_update(new: Obj, old: Obj) -> list[Cause]:
    """core validation ValidatePodUpdate: only images, activeDeadlineSeconds, added tolerations,
    terminationGracePeriodSeconds (from negative to 1) and removed scheduling gates may change."""
    new_spec = orjson.loads(orjson.dumps(new.get("spec") or {}))
    old_spec = old.get("spec") or {}
    for group in ("containers", "initContainers"):
        old_cs = old_spec.get(group) or []
        new_cs = new_spec.get(group) or []
        if len(old_cs) == len(new_cs):
            for nc, oc in zip(new_cs, old_cs, strict=True):
                if isinstance(nc, dict) and isinstance(oc, dict) and "image" in oc:
                    nc["image"] = oc["image"]
    for key in ("activeDeadlineSeconds",):
        if key in old_spec:
            new_spec[key] = old_spec[key]
        else:
            new_spec.pop(key, None)
    old_tol = old_spec.get("tolerations") or []
    new_tol = new_spec.get("tolerations") or []
    if all(t in new_tol for t in old_tol):
        if "tolerations" in old_spec:
            new_spec["tolerations"] = old_spec["tolerations"]
        else:
            new_spec.pop("tolerations", None)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if (
        isinstance(old_grace, int)
        and old_grace < 0
        and new_spec.get("terminationGracePeriodSeconds") == 1
    ):
        new_spec["terminationGracePeriodSeconds"] = old_grace
    old_gates = old_spec.get("schedulingGates") or []
    new_gates = new_spec.get("schedulingGates") or []
    if all(g in old_gates for g in new_gates):  # gates may only be removed
        if "schedulingGates" in old_spec:
            new_spec["schedulingGates"] = old_spec["schedulingGates"]
        else:
            new_spec.pop("schedulingGates", None)
    if new_spec == old_spec:
        return []
    return [_cause("FieldValueForbidden", "spec", POD_UPDATE_FORBIDDEN)]


def _selector(new_spec: Obj, old_spec: Obj) -> list[Cause]:
    """apps validation ValidateDeploymentUpdate / ValidateReplicaSetUpdate / ...: the selector is
    immutable in apps/v1."""
    return _immutable(
        "spec.selector",
        old_spec.get("selector"),
        new_spec.get("selector"),
        _label_selector(new_spec.get("selector")),
    )


def _statefulset_update(new_spec: Obj, old_spec: Obj) -> list[Cause]:
    """apps validation ValidateStatefulSetUpdate: only these spec fields may change."""
    mutable = (
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    )
    rest_new = {k: v for k, v in new_spec.items() if k not in mutable}
    rest_old = {k: v for k, v in old_spec.items() if k not in mutable}
    if rest_new == rest_old:
        return []
    return [
        _cause(
            "FieldValueForbidden",
            "spec",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
            "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
            "'minReadySeconds' are forbidden",
        )
    ]


_JOB_SCHEDULING = ("nodeSelector", "tolerations", "affinity", "schedulingGates")


def _job_update(new: Obj, old: Obj) -> list[Cause]:
    """batch validation ValidateJobSpecUpdate: selector, template, completionMode,
    podFailurePolicy and completions (but for an elastic indexed job) are immutable; a suspended job that never started may change its pods'
    scheduling directives, labels and annotations (validateJobTemplateUpdate)."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    causes = _immutable("spec.selector", old_spec.get("selector"), new_spec.get("selector"))
    for key in ("completionMode", "podFailurePolicy"):
        causes += _immutable(f"spec.{key}", old_spec.get(key), new_spec.get(key))
    elastic = (  # an elastic indexed job scales completions with parallelism
        new_spec.get("completionMode") == "Indexed"
        and new_spec.get("completions") == new_spec.get("parallelism")
        and old_spec.get("completions") == old_spec.get("parallelism")
    )
    if not elastic:
        causes += _immutable(
            "spec.completions", old_spec.get("completions"), new_spec.get("completions")
        )
    new_t, old_t = new_spec.get("template") or {}, old_spec.get("template") or {}
    if old_spec.get("suspend") and not (old.get("status") or {}).get("startTime"):
        strip_new = orjson.loads(orjson.dumps(new_t))
        strip_old = orjson.loads(orjson.dumps(old_t))
        for t in (strip_new, strip_old):
            meta = t.get("metadata") or {}
            meta.pop("labels", None)
            meta.pop("annotations", None)
            for key in _JOB_SCHEDULING:
                (t.get("spec") or {}).pop(key, None)
        new_t, old_t = strip_new, strip_old
    if new_t != old_t:
        causes.append(
            _cause(
                "FieldValueInvalid",
                "spec.template",
                f"Invalid value: core.PodTemplateSpec{_go_value(new_spec.get('template'))}: "
                f"{IMMUTABLE}",
            )
        )
    return causes


def _service_update(new_spec: Obj, old_spec: Obj) -> list[Cause]:
    """core validation validateUpgradeDowngradeClusterIPs: the primary cluster IP may not change
    (except to or from type ExternalName)."""
    if "ExternalName" in (new_spec.get("type"), old_spec.get("type")):
        return []
    old_ips = old_spec.get("clusterIPs") or []
    new_ips = new_spec.get("clusterIPs") or []
    if old_ips and new_ips and old_ips[0] != new_ips[0]:
        shown = "[]string{" + ", ".join(f'"{ip}"' for ip in new_ips) + "}"
        return [
            _cause(
                "FieldValueInvalid",
                "spec.clusterIPs[0]",
                f"Invalid value: {shown}: may not change once set",
            )
        ]
    return []


def _pvc_update(new_spec: Obj, old_spec: Obj, bound: bool) -> list[Cause]:
    """core validation ValidatePersistentVolumeClaimUpdate: the spec is immutable except the
    storage request of a bound claim (which may only grow) and volumeAttributesClassName."""
    mutable = ("resources", "volumeAttributesClassName", "volumeName")
    rest_new = {k: v for k, v in new_spec.items() if k not in mutable}
    rest_old = {k: v for k, v in old_spec.items() if k not in mutable}
    causes: list[Cause] = []
    resources_changed = new_spec.get("resources") != old_spec.get("resources")
    if rest_new != rest_old or (resources_changed and not bound):
        causes.append(
            _cause(
                "FieldValueForbidden",
                "spec",
                "Forbidden: spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims",
            )
        )
    elif resources_changed:
        new_storage = ((new_spec.get("resources") or {}).get("requests") or {}).get("storage")
        old_storage = ((old_spec.get("resources") or {}).get("requests") or {}).get("storage")
        if new_storage and old_storage and parse(new_storage) < parse(old_storage):
            causes.append(
                _cause(
                    "FieldValueForbidden",
                    "spec.resources.requests.storage",
                    "Forbidden: field can not be less than status.capacity",
                )
            )
    if old_spec.get("volumeName") and new_spec.get("volumeName") != old_spec.get("volumeName"):
        causes.append(
            _cause(
                "FieldValueForbidden",
                "spec",
                "Forbidden: spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims",
            )
        )
    return causes


_PV_SOURCES = (
    "awsElasticBlockStore",
    "csi",
    "hostPath",
    "local",
    "nfs",
    "fc",
    "iscsi",
)


def _pv_update(new_spec: Obj, old_spec: Obj) -> list[Cause]:
    """core validation ValidatePersistentVolumeUpdate: the volume source is immutable, and so
    is volumeMode and, once set, nodeAffinity."""
    causes: list[Cause] = []
    if {k: new_spec.get(k) for k in _PV_SOURCES} != {k: old_spec.get(k) for k in _PV_SOURCES}:
        causes.append(
            _cause(
                "FieldValueForbidden",
                "spec.persistentvolumesource",
                "Forbidden: spec.persistentvolumesource is immutable after creation",
            )
        )
    causes += _immutable("spec.volumeMode", old_spec.get("volumeMode"), new_spec.get("volumeMode"))
    if old_spec.get("nodeAffinity"):
        causes += _immutable(
            "nodeAffinity", old_spec.get("nodeAffinity"), new_spec.get("nodeAffinity")
        )
    return causes


def _immutable_data(new: Obj, old: Obj) -> list[Cause]:
    """core validation ValidateConfigMapUpdate / ValidateSecretUpdate: with `immutable: true` the
    data and the flag itself are frozen; a secret's type never changes."""
    causes: list[Cause] = []
    if old.get("kind") == "Secret" or "type" in old:
        causes += _immutable("type", old.get("type"), new.get("type"))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            causes.append(
                _cause(
                    "FieldValueForbidden",
                    "immutable",
                    "Forbidden: field is immutable when `immutable` is set",
                )
            )
        for key in ("data", "binaryData"):
            if (new.get(key) or {}) != (old.get(key) or {}):
                causes.append(
                    _cause(
                        "FieldValueForbidden",
                        key,
                        "Forbidden: field is immutable when `immutable` is set",
                    )
                )
    return causes


def _node_update(new_spec: Obj, old_spec: Obj) -> list[Cause]:
    """core validation ValidateNodeUpdate: podCIDR(s) and providerID are set once."""
    causes: list[Cause] = []
    if old_spec.get("podCIDRs") and new_spec.get("podCIDRs") != old_spec.get("podCIDRs"):
        causes.append(
            _cause(
                "FieldValueForbidden",
                "spec.podCIDRs",
                'Forbidden: node updates may not change podCIDR except from "" to valid',
            )
        )
    if old_spec.get("providerID") and new_spec.get("providerID") != old_spec.get("providerID"):
        causes.append(
            _cause(
                "FieldValueForbidden",
                "spec.providerID",
                'Forbidden: node updates may not change providerID except from "" to valid',
            )
        )
    return causes


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def update_errors(rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
    """The update rules of upstream's Validate<Kind>Update for the kinds users touch."""
    new_spec = _spec(new)
    old_spec = _spec(old)
    key = rt.key
    if key == "pods":
        return _pod_update(new, old)
    if key in ("deployments.apps", "replicasets.apps", "daemonsets.apps"):
        return _selector(new_spec, old_spec)
    if key == "statefulsets.apps":
        return _selector(new_spec, old_spec) or _statefulset_update(new_spec, old_spec)
    if key == "jobs.batch":
        return _job_update(new, old)
    if key == "services":
        return _service_update(new_spec, old_spec)
    if key == "persistentvolumeclaims":
        bound = (old.get("status") or {}).get("phase") == "Bound"
        return _pvc_update(new_spec, old_spec, bound)
    if key == "persistentvolumes":
        return _pv_update(new_spec, old_spec)
    if key in ("configmaps", "secrets"):
        return _immutable_data(new, old)
    if key == "nodes":
        return _node_update(new_spec, old_spec)
    return []
