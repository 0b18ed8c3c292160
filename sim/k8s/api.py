"""REST semantics of the API server, independent of HTTP: what create/get/list/update/patch/delete
mean for every resource (resourceVersion conflicts, generation, finalizers, cascade, dry-run,
subresources). The HTTP layer and the simulated controllers both go through here.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import uuid
from collections.abc import Callable
from typing import Any

import orjson
import yaml

from sim.k8s import admission, ownership
from sim.k8s import patch as patches
from sim.k8s.defaults import IpAllocator, apply_defaults
from sim.k8s.errors import ApiError, already_exists, conflict, not_found, qualified
from sim.k8s.registry import REVIEWS, Registry, ResourceType
from sim.k8s.selectors import (
    check_field_selector,
    parse_field_selector,
    parse_label_selector,
    selector_string,
)
from sim.k8s.store import Obj, Store, clone
from sim.k8s.timeutil import now_iso
from sim.k8s.validation import (
    BuiltinValidator,
    prune_and_default,
    reject_unknown_fields,
    validate_object,
)

Admission = Callable[[ResourceType, Obj, Obj | None], None]

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"
PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


def load_yaml_or_json(raw: bytes) -> Any:
    """Apply bodies are YAML, but clients send JSON (a subset): parse that fast, YAML with libyaml."""
    try:
        return orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError:
        return yaml.load(raw.decode() or "{}", Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _spec_view(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _strip_volatile(obj: Obj) -> Obj:
    meta = {
        k: v for k, v in obj["metadata"].items() if k not in ("resourceVersion", "managedFields")
    }
    return dict(obj, metadata=meta)


def get_path(obj: Obj, path: str) -> Any:
    node: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.strip(".").split(".")
    node = obj
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


ADMIN_USER = {
    "username": "kubernetes-admin",
    "uid": "aws-iam-authenticator:000000000000:AROAEXAMPLESIMADMIN",
    "groups": ["system:masters", "system:authenticated"],
}


def review(rt: ResourceType, body: Obj) -> Obj:
    """Every authenticated caller is a cluster admin here (no RBAC): reviews say so."""
    out = clone(body)
    out["apiVersion"], out["kind"] = rt.group_version, rt.kind
    out.setdefault("metadata", {})["creationTimestamp"] = now_iso()
    if rt.kind == "SelfSubjectAccessReview":
        out["status"] = {
            "allowed": True,
            "reason": "the simulated cluster has no RBAC: every caller is admin",
        }
    elif rt.kind == "SelfSubjectRulesReview":
        out["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    else:
        out["status"] = {"userInfo": dict(ADMIN_USER)}
    return out


class Api:
    def __init__(
        self, store: Store, registry: Registry, kubernetes_version: str, service_cidr: str
    ) -> None:
        self.store = store
        self.registry = registry
        self.validator = BuiltinValidator(kubernetes_version)
        self.ips = IpAllocator(service_cidr)
        self.admission: list[Admission] = []
        self.crd_listeners: list[Callable[[], None]] = []

    # ---- helpers -------------------------------------------------------------------------

    def resolve(self, api_version: str, kind: str) -> ResourceType:
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            raise ApiError(
                404, f'the server could not find the requested resource ({kind} "{api_version}")'
            )
        return rt

    def _check_namespace(
        self, rt: ResourceType, namespace: str, creating: bool, name: str = ""
    ) -> None:
        """The NamespaceLifecycle admission plugin: nothing in a namespace that does not exist,
        nothing new in one being terminated (403 with a NamespaceTerminating cause)
        (kubernetes/staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle)."""
        if not rt.namespaced:
            return
        if not namespace:
            raise ApiError(400, "the namespace of the object is required")
        ns = self.store.get("namespaces", "", namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if creating and ns["metadata"].get("deletionTimestamp"):
            resource = qualified(rt.plural, rt.group)
            subject = f'{resource} "{name}"' if name else resource
            raise ApiError(
                403,
                f"{subject} is forbidden: unable to create new content in namespace "
                f"{namespace} because it is being terminated",
                details={
                    "name": name,
                    "group": rt.group,
                    "kind": rt.plural,
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {namespace} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    def _finish(self, rt: ResourceType, obj: Obj) -> Obj:
        """Copy for the caller, with the apiVersion of the version asked for."""
        out = clone(obj)
        out["apiVersion"] = rt.group_version
        out["kind"] = rt.kind
        return out

    @staticmethod
    def _manager_entry(
        manager: str,
        operation: str,
        api_version: str,
        subresource: str | None,
        fields: Obj | None = None,
    ) -> Obj:
        entry = {
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version,
            "time": now_iso(),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields or {},
        }
        if subresource:
            entry["subresource"] = subresource
        return entry

    def _record_manager(
        self,
        obj: Obj,
        manager: str | None,
        operation: str,
        rt: ResourceType,
        sub: str | None,
        fields: Obj | None = None,
    ) -> None:
        manager = manager or "unknown"
        kept = [
            f
            for f in obj["metadata"].get("managedFields") or []
            if not (
                f.get("manager") == manager
                and f.get("operation") == operation
                and f.get("subresource") == sub
            )
        ]
        kept.append(self._manager_entry(manager, operation, rt.group_version, sub, fields))
        obj["metadata"]["managedFields"] = kept

    def _admit_and_validate(
        self, rt: ResourceType, obj: Obj, old: Obj | None, strict: bool, internal: bool
    ) -> Obj:
        if not rt.builtin and rt.schema:
            if strict:
                reject_unknown_fields(rt, obj)
            obj = prune_and_default(rt.schema, obj)
        admission.check_quantities(rt, obj)
        apply_defaults(rt.key, obj, old, self.ips)
        for plugin in self.admission:
            plugin(rt, obj, old)
        causes = admission.resource_requirement_errors(rt, obj) if rt.builtin else []
        if old is not None and rt.builtin and not internal:
            # the emulator's own controllers stand for kubelet/scheduler subresources (binding)
            causes += admission.update_errors(rt, obj, old)
        validate_object(rt, obj, self.validator, strict=strict, extra=causes)
        return obj

    # ---- reads ---------------------------------------------------------------------------

    def get_raw(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(rt.key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return obj

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        return self._finish(rt, self.get_raw(rt, namespace, name))

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> Obj:
        labels = parse_label_selector(label_selector)
        check_field_selector(rt.key, field_selector)
        fields = parse_field_selector(field_selector)
        with self.store.lock:
            rv = self.store.rv
            items = [
                o for o in self.store.items(rt.key, namespace or None) if labels(o) and fields(o)
            ]
        if continue_token:
            try:
                start = json.loads(base64.urlsafe_b64decode(continue_token.encode()))["start"]
            except (ValueError, KeyError) as exc:
                raise ApiError(400, "continue key is not valid") from exc
            items = [
                o
                for o in items
                if [o["metadata"].get("namespace") or "", o["metadata"]["name"]] > start
            ]
        meta: Obj = {"resourceVersion": str(rv)}
        if limit and len(items) > limit:
            rest = len(items) - limit
            items = items[:limit]
            last = items[-1]["metadata"]
            token = {"start": [last.get("namespace") or "", last["name"]], "rv": rv}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            meta["remainingItemCount"] = rest
        gv = rt.group_version
        out_items = []
        for o in items:
            if o.get("apiVersion") != gv:
                o = dict(o, apiVersion=gv)
            out_items.append(o)
        return {"kind": f"{rt.kind}List", "apiVersion": gv, "metadata": meta, "items": out_items}

    # ---- writes --------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Obj,
        *,
        dry_run: bool = False,
        strict: bool = False,
        manager: str | None = None,
        internal: bool = False,
        operation: str = "Update",
        fields: Obj | None = None,
    ) -> Obj:
        if "create" not in rt.verbs:
            raise ApiError(405, f"create is not supported on {rt.plural}")
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request must be an object")
        if rt.key in REVIEWS:
            return review(rt, body)
        obj = clone(body)
        kind = obj.get("kind")
        if kind and kind != rt.kind:
            raise ApiError(
                400,
                f"the API version in the data ({obj.get('apiVersion')}) does not match the expected API version ({rt.group_version})",
            )
        obj["apiVersion"], obj["kind"] = rt.group_version, rt.kind
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "metadata must be an object")
        if rt.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise ApiError(
                    400,
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            namespace = namespace or meta.get("namespace") or ""
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
            namespace = ""
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice(_NAME_CHARS) for _ in range(5)
            )
        if meta.get("resourceVersion") and operation != "Apply":
            raise ApiError(400, "resourceVersion should not be set on objects to be created")
        for volatile in (
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(volatile, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_iso()
        meta["generation"] = 1
        if rt.status_subresource and not internal:
            obj.pop("status", None)
        self._check_namespace(rt, namespace, creating=True, name=str(meta.get("name") or ""))
        if operation == "Update" and not internal and manager:
            fields = patches.field_set(body)  # the creator owns what it sent, not the defaults
        obj = self._admit_and_validate(rt, obj, None, strict, internal)
        self._record_manager(obj, manager, operation, rt, None, fields)
        with self.store.lock:
            if self.store.get(rt.key, namespace, obj["metadata"]["name"]) is not None:
                raise already_exists(rt.plural, rt.group, obj["metadata"]["name"])
            if rt.key == _CRD_KEY:
                self._register_crd(obj, dry_run)
            if dry_run:
                return self._finish(rt, obj)
            self.store.put(rt.key, obj, "ADDED")
        return self._finish(rt, obj)

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Obj,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        strict: bool = False,
        manager: str | None = None,
        internal: bool = False,
        operation: str = "Update",
        fields: Obj | None = None,
    ) -> Obj:
        if not isinstance(body, dict) or not isinstance(body.get("metadata", {}), dict):
            raise ApiError(400, "the body of the request must be an object")
        namespace = namespace if rt.namespaced else ""
        with self.store.lock:
            current = self.get_raw(rt, namespace, name)
            body_meta = body.get("metadata") or {}
            if body_meta.get("name") not in (None, name):
                # a name never changes (apiserver handlers' checkName)
                raise ApiError(
                    400,
                    f"the name of the object ({body_meta.get('name')}) does not match the name "
                    f"on the URL ({name})",
                )
            want_rv = body_meta.get("resourceVersion")
            if want_rv and str(want_rv) != current["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            if subresource == "status":
                obj = clone(current)
                if "status" in body:
                    obj["status"] = clone(body["status"]) if body["status"] is not None else {}
                else:
                    obj.pop("status", None)
            else:
                obj = clone(body)
                obj["apiVersion"], obj["kind"] = rt.group_version, rt.kind
                meta = obj.setdefault("metadata", {})
                for keep in (
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                    "namespace",
                    "name",
                ):
                    if keep in current["metadata"]:
                        meta[keep] = current["metadata"][keep]
                    else:
                        meta.pop(keep, None)
                if "managedFields" not in meta and "managedFields" in current["metadata"]:
                    meta["managedFields"] = current["metadata"]["managedFields"]
                if rt.status_subresource and not internal:
                    if "status" in current:
                        obj["status"] = clone(current["status"])
                    else:
                        obj.pop("status", None)
            obj = self._admit_and_validate(rt, obj, current, strict, internal)
            if _spec_view(obj) != _spec_view(current):
                obj["metadata"]["generation"] = int(current["metadata"].get("generation", 1)) + 1
            if _strip_volatile(obj) == _strip_volatile(current):
                return self._finish(rt, current)
            if operation == "Update" and not internal and manager:
                fields = ownership.take_update(obj, current, manager, subresource)
            self._record_manager(obj, manager, operation, rt, subresource, fields)
            if rt.key == _CRD_KEY:
                self._register_crd(obj, dry_run)
            if dry_run:
                return self._finish(rt, obj)
            meta = obj["metadata"]
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                self._remove(rt, current, "Background")
                return self._finish(rt, obj)
            self.store.put(rt.key, obj, "MODIFIED")
        return self._finish(rt, obj)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        raw: bytes,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        strict: bool = False,
        manager: str | None = None,
        force: bool = False,
        internal: bool = False,
    ) -> Obj:
        content_type = content_type.split(";")[0].strip()
        try:
            if content_type == patches.APPLY_PATCH:
                body = load_yaml_or_json(raw)
            else:
                body = orjson.loads(raw or b"{}")
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiError(400, f"error decoding patch: {exc}") from exc
        namespace = namespace if rt.namespaced else ""
        if content_type == patches.APPLY_PATCH:
            if not manager:
                raise ApiError(
                    400, "PATCH requests with apply patch type must have a field manager"
                )
            if not isinstance(body, dict):
                raise ApiError(400, "apply patch must be an object")
            with self.store.lock:
                if self.store.get(rt.key, namespace, name) is None and subresource is None:
                    body.setdefault("metadata", {})["name"] = name
                    return self.create(
                        rt,
                        namespace,
                        body,
                        dry_run=dry_run,
                        strict=strict,
                        manager=manager,
                        internal=internal,
                        operation="Apply",
                        fields=patches.field_set(body),
                    )
        with self.store.lock:
            current = self.get_raw(rt, namespace, name)
            if subresource == "scale":
                scale = self.scale_of(rt, current)
                patched = self._apply_patch_type(rt, content_type, scale, body)
                return self.update_scale(rt, namespace, name, patched, dry_run=dry_run)
            base = clone(current)
            patched = self._apply_patch_type(rt, content_type, base, body)
            if not isinstance(patched, dict):
                raise ApiError(422, "the patch produced something other than an object")
            applied_fields = None
            if content_type == patches.APPLY_PATCH:
                applied_fields = patches.field_set(body)
                before = next(
                    (
                        f.get("fieldsV1") or {}
                        for f in current["metadata"].get("managedFields") or []
                        if f.get("manager") == manager
                        and f.get("operation") == "Apply"
                        and not f.get("subresource")
                    ),
                    {},
                )
                patches.prune_unapplied(patched, before, applied_fields)
                ownership.check_apply(
                    current,
                    body,
                    applied_fields,
                    manager or "",
                    force,
                    rt.kind,
                    patched.setdefault("metadata", {}).setdefault("managedFields", []),
                )
            patched.setdefault("metadata", {})
            if content_type != patches.JSON_PATCH or "resourceVersion" not in patched["metadata"]:
                patched["metadata"].setdefault(
                    "resourceVersion", current["metadata"]["resourceVersion"]
                )
            operation = "Apply" if content_type == patches.APPLY_PATCH else "Update"
            return self.update(
                rt,
                namespace,
                name,
                patched,
                subresource=subresource,
                dry_run=dry_run,
                strict=strict,
                manager=manager,
                internal=internal,
                operation=operation,
                fields=applied_fields,
            )

    def _apply_patch_type(self, rt: ResourceType, content_type: str, base: Obj, body: Any) -> Any:
        if content_type == patches.JSON_PATCH:
            return patches.json_patch(base, body)
        if content_type == patches.MERGE_PATCH:
            return patches.merge_patch(base, body)
        if content_type == patches.STRATEGIC_PATCH:
            if not rt.builtin:
                raise ApiError(
                    415,
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml",
                )
            return patches.strategic_merge(base, body)
        if content_type == patches.APPLY_PATCH:
            body = dict(body)
            if rt.status_subresource:
                body.pop("status", None)
            return (
                patches.apply_patch_merge(base, body)
                if rt.builtin
                else patches.merge_patch(base, body)
            )
        raise ApiError(415, f"the body of the request was in an unknown format - {content_type}")

    # ---- scale ---------------------------------------------------------------------------

    def _scale_paths(self, rt: ResourceType) -> tuple[str, str, str | None]:
        if rt.scale_paths:
            return rt.scale_paths
        if "scale" not in rt.subresources:
            raise ApiError(404, "the server could not find the requested resource")
        return ".spec.replicas", ".status.replicas", None

    def scale_of(self, rt: ResourceType, obj: Obj) -> Obj:
        spec_path, status_path, selector_path = self._scale_paths(rt)
        meta = obj["metadata"]
        if selector_path:
            selector = get_path(obj, selector_path) or ""
        else:
            sel = (obj.get("spec") or {}).get("selector")
            selector = selector_string(sel) if isinstance(sel, dict) else ""
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": get_path(obj, spec_path) or 0},
            "status": {"replicas": get_path(obj, status_path) or 0, "selector": selector},
        }

    def get_scale(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        return self.scale_of(rt, self.get_raw(rt, namespace, name))

    def update_scale(
        self, rt: ResourceType, namespace: str, name: str, body: Obj, *, dry_run: bool = False
    ) -> Obj:
        replicas = (body.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise ApiError(
                422,
                f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0',
                details={
                    "causes": [
                        {
                            "reason": "FieldValueInvalid",
                            "field": "spec.replicas",
                            "message": "must be greater than or equal to 0",
                        }
                    ]
                },
            )
        with self.store.lock:
            current = self.get_raw(rt, namespace, name)
            want_rv = (body.get("metadata") or {}).get("resourceVersion")
            if want_rv and str(want_rv) != current["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            obj = clone(current)
            set_path(obj, self._scale_paths(rt)[0], replicas)
            obj["metadata"].pop("resourceVersion", None)
            updated = self.update(
                rt, namespace, name, obj, dry_run=dry_run, internal=True, subresource=None
            )
        return self.scale_of(rt, updated)

    # ---- delete --------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: Obj | None = None,
        dry_run: bool = False,
    ) -> Obj:
        namespace = namespace if rt.namespaced else ""
        if rt.key == "namespaces" and name in PROTECTED_NAMESPACES:
            raise ApiError(
                403, f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            )
        with self.store.lock:
            current = self.get_raw(rt, namespace, name)
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != current["metadata"]["uid"]:
                raise ApiError(
                    409,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {current['metadata']['uid']}",
                    reason="Conflict",
                )
            if (
                pre.get("resourceVersion")
                and pre["resourceVersion"] != current["metadata"]["resourceVersion"]
            ):
                raise ApiError(
                    409,
                    f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, ResourceVersion in object meta: {current['metadata']['resourceVersion']}",
                    reason="Conflict",
                )
            if dry_run:
                return self._finish(rt, current)
            policy = propagation or "Background"
            finalizers = list(current["metadata"].get("finalizers") or [])
            if policy == "Foreground":
                self._cascade(current, "Background")
            if finalizers or rt.key == "namespaces":
                if current["metadata"].get("deletionTimestamp"):
                    return self._finish(rt, current)
                obj = clone(current)
                obj["metadata"]["deletionTimestamp"] = now_iso()
                obj["metadata"]["deletionGracePeriodSeconds"] = 0
                if policy == "Orphan" and "orphan" not in finalizers:
                    self._cascade(current, "Orphan")
                if rt.key == "namespaces":
                    obj.setdefault("status", {})["phase"] = "Terminating"
                self.store.put(rt.key, obj, "MODIFIED")
                return self._finish(rt, obj)
            self._remove(rt, current, policy)
        if rt.key == "pods" or not rt.builtin:
            return self._finish(rt, current)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {
                "name": name,
                "group": rt.group,
                "kind": rt.plural,
                "uid": current["metadata"]["uid"],
            },
        }

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        propagation: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        listed = self.list_objects(rt, namespace, label_selector, field_selector)
        for item in listed["items"]:
            meta = item["metadata"]
            try:
                self.delete(
                    rt,
                    meta.get("namespace") or "",
                    meta["name"],
                    propagation=propagation,
                    dry_run=dry_run,
                )
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return listed

    def _remove(self, rt: ResourceType, obj: Obj, policy: str) -> None:
        meta = obj["metadata"]
        self.store.remove(rt.key, meta.get("namespace") or "", meta["name"])
        if rt.key == _CRD_KEY:
            self._unregister_crd(obj)
        self._cascade(obj, policy)

    def dependents(self, owner: Obj) -> list[tuple[ResourceType, Obj]]:
        uid = owner["metadata"]["uid"]
        owner_ns = owner["metadata"].get("namespace")
        found = []
        for key in self.store.resource_keys():
            rt = self.registry.by_key(key)
            if rt is None:
                continue
            for obj in self.store.items(key, owner_ns if owner_ns else None):
                refs = obj["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == uid for r in refs):
                    found.append((rt, obj))
        return found

    def _cascade(self, owner: Obj, policy: str) -> None:
        """The garbage collector: dependents go with their owner unless orphaned."""
        uid = owner["metadata"]["uid"]
        for rt, dep in self.dependents(owner):
            meta = dep["metadata"]
            refs = meta.get("ownerReferences") or []
            others = [r for r in refs if r.get("uid") != uid]
            ns = meta.get("namespace") or ""
            if policy == "Orphan" or others:
                orphan = clone(dep)
                orphan["metadata"]["ownerReferences"] = others
                if not others:
                    orphan["metadata"].pop("ownerReferences")
                self.store.put(rt.key, orphan, "MODIFIED")
            else:
                with contextlib.suppress(ApiError):
                    self.delete(rt, ns, meta["name"], propagation="Background")

    def finalize_namespace(self, name: str) -> bool:
        """Delete what a terminating namespace holds; remove it once empty. True when gone."""
        with self.store.lock:
            ns = self.store.get("namespaces", "", name)
            if ns is None:
                return True
            remaining = 0
            for key in self.store.resource_keys():
                rt = self.registry.by_key(key)
                if rt is None or not rt.namespaced:
                    continue
                for obj in self.store.items(key, name):
                    remaining += 1
                    if not obj["metadata"].get("deletionTimestamp"):
                        with contextlib.suppress(ApiError):
                            self.delete(rt, name, obj["metadata"]["name"])
            if remaining and any(
                self.store.items(k, name) for k in self.store.resource_keys() if k != "namespaces"
            ):
                return False
            self.store.remove("namespaces", "", name)
            return True

    # ---- CRDs ----------------------------------------------------------------------------

    def _register_crd(self, crd: Obj, dry_run: bool) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        expected = f"{names.get('plural')}.{spec.get('group')}"
        if crd["metadata"]["name"] != expected:
            raise ApiError(
                422,
                f'CustomResourceDefinition.apiextensions.k8s.io "{crd["metadata"]["name"]}" is invalid: metadata.name: Invalid value: "{crd["metadata"]["name"]}": must be spec.names.plural+"."+spec.group',
                details={
                    "causes": [
                        {
                            "reason": "FieldValueInvalid",
                            "field": "metadata.name",
                            "message": 'must be spec.names.plural+"."+spec.group',
                        }
                    ]
                },
            )
        if dry_run:
            return
        self.registry.add_crd(crd)
        crd["status"] = {
            "acceptedNames": {k: v for k, v in names.items()},
            "storedVersions": [v["name"] for v in spec.get("versions", []) if v.get("storage")],
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                    "lastTransitionTime": now_iso(),
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                    "lastTransitionTime": now_iso(),
                },
            ],
        }
        for listener in self.crd_listeners:
            listener()

    def _unregister_crd(self, crd: Obj) -> None:
        spec = crd["spec"]
        plural, group = spec["names"]["plural"], spec["group"]
        self.registry.remove_crd(group, plural)
        self.store.drop_resource(f"{plural}.{group}")
        for listener in self.crd_listeners:
            listener()
