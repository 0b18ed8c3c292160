"""Field ownership of server-side apply: who manages which field, and the conflicts an apply
meets when another manager owns a field it sets to a different value.

Follows structured-merge-diff's rules as the API server applies them (apimachinery
pkg/util/managedfields: a non-forced apply that changes a field another manager owns is a 409
with `Apply failed with N conflict(s)`; `force` moves the fields to the applier; an update
takes ownership of the fields it changes, from whoever had them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sim.k8s.errors import ApiError
from sim.k8s.patch import field_set

Obj = dict[str, Any]
Path = tuple[str, ...]  # fieldsV1 keys: `f:name`, `k:{"name":"c"}`, `.`


def leaves(fields: Obj, prefix: Path = ()) -> Iterator[Path]:
    """Every owned field of a fieldsV1 set (`.` marks a list item owned as such)."""
    for key, sub in fields.items():
        path = (*prefix, key)
        if key == "." or not sub:
            yield path
        else:
            yield from leaves(sub, path)


def _value(obj: Any, path: Path) -> tuple[bool, Any]:
    node = obj
    for key in path:
        if key == ".":
            return True, None
        if key.startswith("f:") and isinstance(node, dict) and key[2:] in node:
            node = node[key[2:]]
        elif key.startswith("k:") and isinstance(node, list):
            want = json.loads(key[2:])
            node = next(
                (
                    i
                    for i in node
                    if isinstance(i, dict) and all(i.get(k) == v for k, v in want.items())
                ),
                None,
            )
            if node is None:
                return False, None
        else:
            return False, None
    return True, node


def path_string(path: Path) -> str:
    """fieldpath.Path's String(): `.spec.replicas`, `.spec.containers[name="c"].image`."""
    out = ""
    for key in path:
        if key.startswith("f:"):
            out += "." + key[2:]
        elif key.startswith("k:"):
            out += (
                "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(key[2:]).items()) + "]"
            )
    return out


def _has(fields: Obj, path: Path) -> bool:
    node = fields
    for key in path:
        if key not in node:
            return False
        node = node[key]
    return True


def _remove(fields: Obj, path: Path) -> None:
    node = fields
    trail = []
    for key in path[:-1]:
        if key not in node:
            return
        trail.append((node, key))
        node = node[key]
    node.pop(path[-1], None)
    for parent, key in reversed(trail):  # drop what became empty
        if not parent[key]:
            parent.pop(key)
        else:
            break


def _add(fields: Obj, path: Path) -> None:
    node = fields
    for key in path:
        node = node.setdefault(key, {})


def _printed(entry: Obj) -> str:
    """printManager: `"name"`, with its subresource, and `using <apiVersion> at <time>` for an
    update's manager."""
    text = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        text += f" with subresource {json.dumps(entry['subresource'])}"
    if entry.get("operation") == "Update":
        text += f" using {entry.get('apiVersion')}"
        if entry.get("time"):
            text += f" at {entry['time']}"
    return text


def _is_self(entry: Obj, manager: str) -> bool:
    return (
        entry.get("manager") == manager
        and entry.get("operation") == "Apply"
        and not entry.get("subresource")
    )


def check_apply(
    current: Obj,
    applied: Obj,
    applied_fields: Obj,
    manager: str,
    force: bool,
    kind: str,
    entries: list[Obj],
) -> None:
    """409 for the fields `applied` changes that other managers own; with `force`, they move
    to the applier (removed from `entries`, the managedFields about to be stored)."""
    conflicts: list[tuple[Obj, Path]] = []
    for path in leaves(applied_fields):
        if path[-1] == ".":
            continue
        found_now, now = _value(current, path)
        _, wanted = _value(applied, path)
        if found_now and now == wanted:
            continue  # the same value: shared ownership, no conflict
        for entry in entries:
            if not _is_self(entry, manager) and _has(entry.get("fieldsV1") or {}, path):
                conflicts.append((entry, path))
    if conflicts and manager == "kubectl":
        allowed = _last_applied(current)
        conflicts = [(e, p) for e, p in conflicts if p not in allowed]
        force = force or not conflicts
        if not conflicts:  # only what client-side apply last set: kubectl takes it over
            conflicts = [
                (e, p)
                for p in leaves(applied_fields)
                for e in entries
                if not _is_self(e, manager) and _has(e.get("fieldsV1") or {}, p)
            ]
    if not conflicts:
        return
    if force:
        for entry, path in conflicts:
            _remove(entry.setdefault("fieldsV1", {}), path)
        return
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_printed(entry)}",
            "field": path_string(path),
        }
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {_printed(entry)}: {path_string(path)}"
        )
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(_printed(entry), []).append(path_string(path))
        lines = []
        for who in sorted(by_manager):
            lines.append(f"conflicts with {who}:")
            lines += [f"- {p}" for p in by_manager[who]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    raise ApiError(409, message, reason="Conflict", details={"causes": causes, "kind": kind})


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _last_applied(current: Obj) -> set[Path]:
    """lastAppliedManager.allowedConflictsFromLastApplied: the fields client-side apply last
    set and that still hold those values, which `kubectl apply --server-side` (manager
    `kubectl`) may take over without a conflict, upgrading an object from client-side apply."""
    raw = (current["metadata"].get("annotations") or {}).get(LAST_APPLIED)
    try:
        last = json.loads(raw) if raw else None
    except ValueError:
        return set()
    if not isinstance(last, dict):
        return set()
    return {
        path
        for path in leaves(field_set(last))
        if path[-1] != "." and _value(last, path) == _value(current, path)
    }


def _changed(old: Any, new: Any, field: str = "", root: bool = True) -> Obj:
    """The fieldsV1 set of what an update sets differently from `old` (status aside)."""
    if isinstance(new, dict) and isinstance(old, dict):
        out: Obj = {}
        for key, sub in new.items():
            if root and key in ("apiVersion", "kind", "status"):
                continue
            if root and key == "metadata":
                meta_old = {
                    k: v
                    for k, v in (old.get("metadata") or {}).items()
                    if k in ("labels", "annotations")
                }
                meta_new = {k: v for k, v in sub.items() if k in ("labels", "annotations")}
                changed = _changed(meta_old, meta_new, "metadata", False)
                if changed:
                    out["f:metadata"] = changed
                continue
            if key not in old:
                out[f"f:{key}"] = field_set(sub, key, False)
            elif old[key] != sub:
                out[f"f:{key}"] = _changed(old[key], sub, key, False)
        return out
    return {} if old == new else field_set(new, field, False)


def take_update(obj: Obj, old: Obj | None, manager: str, subresource: str | None) -> Obj:
    """An update's manager owns what it set (all of it on create); others lose those fields.
    Returns the manager's new field set."""
    changed = field_set(obj) if old is None else _changed(old, obj)
    mine = next(
        (
            e.get("fieldsV1") or {}
            for e in (old or {}).get("metadata", {}).get("managedFields") or []
            if e.get("manager") == manager
            and e.get("operation") == "Update"
            and e.get("subresource") == subresource
        ),
        {},
    )
    mine = dict(json.loads(json.dumps(mine)))
    for path in leaves(changed):
        _add(mine, path)
        for entry in obj["metadata"].get("managedFields") or []:
            if not (
                entry.get("manager") == manager
                and entry.get("operation") == "Update"
                and entry.get("subresource") == subresource
            ):
                _remove(entry.setdefault("fieldsV1", {}), path)
    return mine
