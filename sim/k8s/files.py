"""What containers leave on storage: a file written to a mounted volume outlives the container
and its pod, so the next pod finds it (a model download resumes from the files already there).

A volume is known by what backs it: a Mountpoint for Amazon S3 volume by its bucket (and
prefix), shared by every cluster of the simulated world as a bucket is; any other persistent
volume by its cluster and name; a node's hostPath by the node; anything else (emptyDir, the
container's own filesystem) by the pod, and forgotten with it. A file appears once complete, as
Mountpoint uploads an object when the file is closed: a file cut short leaves nothing.
"""

from __future__ import annotations

import posixpath
import threading

from sim.k8s.store import Obj, Store

S3_CSI_DRIVER = "s3.csi.aws.com"


class SharedFiles:
    """Complete files (path -> size in bytes) per volume; thread-safe (one per simulated world)."""

    def __init__(self) -> None:
        self._volumes: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def put(self, volume: str, path: str, size: int) -> None:
        with self._lock:
            self._volumes.setdefault(volume, {})[path] = size

    def remove(self, volume: str, path: str) -> None:
        with self._lock:
            self._volumes.get(volume, {}).pop(path, None)

    def size(self, volume: str, path: str) -> int | None:
        with self._lock:
            return self._volumes.get(volume, {}).get(path)

    def listing(self, volume: str, prefix: str = "") -> dict[str, int]:
        """The files under `prefix` (a directory inside the volume; "" for all of it)."""
        start = prefix.rstrip("/") + "/" if prefix else ""
        with self._lock:
            files = self._volumes.get(volume, {})
            return {p: s for p, s in files.items() if p.startswith(start)}

    def forget(self, volume_prefix: str) -> None:
        """Drop the volumes whose key starts with `volume_prefix` (a pod's own, once it is gone)."""
        with self._lock:
            for key in [k for k in self._volumes if k.startswith(volume_prefix)]:
                del self._volumes[key]


def pod_volume(pod: Obj) -> str:
    """The key prefix of what only this pod sees (its containers' filesystems, emptyDirs)."""
    return f"pod/{pod['metadata'].get('uid', pod['metadata']['name'])}"


def _mount_option(options: list[str], name: str) -> str | None:
    for option in options:
        key, _, value = option.replace("=", " ", 1).partition(" ")
        if key.strip().lstrip("-") == name and value.strip():
            return value.strip()
    return None


def _backing(store: Store, cluster: str, pod: Obj, volume: Obj | None) -> tuple[str, str]:
    """(volume key, prefix inside it) of a pod volume."""
    if volume is None:
        return pod_volume(pod), ""
    name = volume.get("name", "")
    csi = volume.get("csi") or {}
    claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
    if claim:
        pvc = store.get("persistentvolumeclaims", pod["metadata"].get("namespace", ""), claim)
        pv_name = ((pvc or {}).get("spec") or {}).get("volumeName")
        pv = store.get("persistentvolumes", "", pv_name) if pv_name else None
        if pv is None:
            return f"{pod_volume(pod)}/{name}", ""
        csi = pv["spec"].get("csi") or {}
        if csi.get("driver") != S3_CSI_DRIVER:
            return f"pv/{cluster}/{pv['metadata']['name']}", ""
        options = list(pv["spec"].get("mountOptions") or [])
    else:
        options = []
    bucket = (csi.get("volumeAttributes") or {}).get("bucketName")
    if csi.get("driver") == S3_CSI_DRIVER and bucket:
        prefix = _mount_option(options, "prefix") or ""
        return f"s3://{bucket}", prefix.strip("/")
    if volume.get("hostPath"):
        node = pod["spec"].get("nodeName") or "unscheduled"
        return f"host/{cluster}/{node}", str(volume["hostPath"].get("path", "")).strip("/")
    return f"{pod_volume(pod)}/{name}", ""


def locate(store: Store, cluster: str, pod: Obj, container: Obj, path: str) -> tuple[str, str]:
    """(volume key, path inside it) of the absolute `path` as `container` of `pod` sees it."""
    path = posixpath.normpath("/" + path.lstrip("/"))
    best: tuple[str, Obj] | None = None
    for mount in container.get("volumeMounts") or []:
        mount_path = posixpath.normpath(str(mount.get("mountPath", "/")))
        inside = path == mount_path or path.startswith(mount_path.rstrip("/") + "/")
        if inside and (best is None or len(mount_path) > len(best[0])):
            best = (mount_path, mount)
    if best is None:
        return f"{pod_volume(pod)}/rootfs/{container.get('name', '')}", path.lstrip("/")
    mount_path, mount = best
    relative = "" if path == mount_path else posixpath.relpath(path, mount_path)
    if mount.get("subPath"):
        relative = posixpath.join(str(mount["subPath"]), relative).rstrip("/")
    volume = next(
        (v for v in pod["spec"].get("volumes") or [] if v.get("name") == mount.get("name")), None
    )
    key, prefix = _backing(store, cluster, pod, volume)
    return key, posixpath.join(prefix, relative).strip("/") if prefix else relative
