"""The four patch types: JSON patch, merge patch, strategic merge patch, server-side apply."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch

from sim.k8s.errors import ApiError

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# patchMergeKey of the list fields built-in kinds merge by (field name -> key). `ports` depends
# on where it sits (containers merge by containerPort, services by port): see _merge_key.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "subsets": "",
}
# Lists of scalars that strategic merge unions instead of replacing.
MERGED_SCALAR_LISTS = {"finalizers"}


def json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    if not isinstance(ops, list):
        raise ApiError(400, "json patch must be a list of operations")
    try:
        result: dict[str, Any] = jsonpatch.apply_patch(target, ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise ApiError(
            422, f"the server rejected our request due to an error in our request: {exc}"
        ) from exc
    return result


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge, null deletes, everything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        sample = next((i for i in items if isinstance(i, dict)), {})
        return "containerPort" if "containerPort" in sample else "port"
    key = MERGE_KEYS.get(field)
    return key or None


def strategic_merge(target: Any, patch: Any, field: str = "") -> Any:
    """Strategic merge: like a merge patch, but lists with a patchMergeKey merge item by item.

    Honours the `$patch` (replace/delete), `$retainKeys`, `$deleteFromPrimitiveList/<f>` and
    `$setElementOrder/<f>` directives kubectl sends.
    """
    if not isinstance(patch, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, key)
        elif isinstance(value, dict):
            merged = strategic_merge(result.get(key), value, key)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    for name, order in orders.items():
        result[name] = _order(result.get(name) or [], order, _merge_key(name, order))
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(existing: Any, patch: list[Any], field: str) -> list[Any]:
    current: list[Any] = list(existing) if isinstance(existing, list) else []
    if field in MERGED_SCALAR_LISTS:
        return current + [v for v in patch if v not in current]
    key = _merge_key(field, patch + current)
    if key is None or not all(isinstance(i, dict) for i in patch):
        return [i for i in patch if not (isinstance(i, dict) and i.get("$patch"))]
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [i for i in patch if not i.get("$patch")]
    result = list(current)
    for item in patch:
        idx = next(
            (
                n
                for n, c in enumerate(result)
                if isinstance(c, dict) and key in item and c.get(key) == item.get(key)
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                result.pop(idx)
            continue
        if idx is None:
            result.append(strategic_merge({}, item, field))
        else:
            result[idx] = strategic_merge(result[idx], item, field)
    return result


def _order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    if key is None:
        return items
    wanted = [o.get(key) if isinstance(o, dict) else o for o in order]
    rank = {v: n for n, v in enumerate(wanted)}
    return sorted(
        items,
        key=lambda i: rank.get(i.get(key) if isinstance(i, dict) else i, len(rank)),
    )


def apply_patch_merge(target: dict[str, Any], applied: dict[str, Any]) -> dict[str, Any]:
    """Server-side apply: the applied configuration merges like a strategic patch; the caller
    then prunes what the same manager applied before and dropped (see `prune_unapplied`).
    Ownership conflicts between managers are not detected."""
    merged = strategic_merge(target, applied)
    assert isinstance(merged, dict)
    return merged


def field_set(value: Any, field: str = "", root: bool = True) -> dict[str, Any]:
    """The fieldsV1 set of an applied configuration: `f:<field>` for keys, `k:{...}` for list
    items with a merge key; other lists are atomic (owned whole)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            if root and key in ("apiVersion", "kind", "status"):
                continue
            if root and key == "metadata" and isinstance(sub, dict):
                meta = {
                    k: v for k, v in sub.items() if k in ("labels", "annotations", "finalizers")
                }
                if meta:
                    out["f:metadata"] = field_set(meta, "metadata", False)
                continue
            out[f"f:{key}"] = field_set(sub, key, False)
        return out
    if isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        key = _merge_key(field, value)
        if key and all(key in i for i in value):
            return {
                "k:" + json.dumps({key: i[key]}, separators=(",", ":")): {
                    ".": {},
                    **field_set(i, field, False),
                }
                for i in value
            }
    return {}


def prune_unapplied(obj: Any, before: dict[str, Any], now: dict[str, Any]) -> None:
    """Remove from `obj` the fields a manager applied before and no longer applies."""
    for fkey, sub_before in before.items():
        if fkey == ".":
            continue
        if fkey.startswith("f:"):
            name = fkey[2:]
            if not isinstance(obj, dict) or name not in obj:
                continue
            if fkey not in now:
                del obj[name]
            elif sub_before:
                prune_unapplied(obj[name], sub_before, now[fkey])
        elif fkey.startswith("k:") and isinstance(obj, list):
            ident = json.loads(fkey[2:])
            idx = next(
                (
                    n
                    for n, item in enumerate(obj)
                    if isinstance(item, dict) and all(item.get(k) == v for k, v in ident.items())
                ),
                None,
            )
            if idx is None:
                continue
            if fkey not in now:
                obj.pop(idx)
            else:
                prune_unapplied(obj[idx], sub_before, now[fkey])
