"""The persistent volume controller: binds claims to matching volumes, and provisions volumes
for claims whose StorageClass names an installed CSI driver (FSx, Mountpoint for S3, EBS)."""

from __future__ import annotations

from sim.k8s.controllers.base import Controller, Rule
from sim.k8s.quantity import parse
from sim.k8s.store import Obj, WatchEvent, clone


def _pending(pvc: Obj) -> bool:
    return (pvc.get("status") or {}).get("phase", "Pending") == "Pending" and not pvc[
        "metadata"
    ].get("deletionTimestamp")


def _size(obj: Obj, path: str) -> float:
    node = obj.get("spec") or {}
    for part in path.split("."):
        node = node.get(part) or {}
    try:
        return parse(node) if node else 0.0
    except ValueError:
        return 0.0


class VolumeController(Controller):
    name = "persistentvolume-binder"

    def build_rules(self) -> list[Rule]:
        return [Rule("bind", "persistentvolumeclaims", _pending, self.bind, delay="pod_schedule")]

    def extra_watches(self) -> tuple[str, ...]:
        return ("persistentvolumes", "csidrivers.storage.k8s.io", "storageclasses.storage.k8s.io")

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key == "persistentvolumeclaims":
            return []
        return [
            ("persistentvolumeclaims", c["metadata"]["namespace"], c["metadata"]["name"])
            for c in self.store.items("persistentvolumeclaims")
            if _pending(c)
        ]

    def deleted(self, event: WatchEvent) -> None:
        """A claim deleted: the Retain volume bound to it becomes Released, and keeps its
        claimRef (with the old claim's uid), so no other claim binds it until an administrator
        clears it or remakes the volume ("Reclaiming: Retain", kubernetes.io/docs/concepts/
        storage/persistent-volumes/#retain)."""
        if event.key != "persistentvolumeclaims":
            return
        uid = event.obj["metadata"].get("uid")
        for pv in self.store.items("persistentvolumes"):
            ref = pv["spec"].get("claimRef") or {}
            if (
                uid
                and ref.get("uid") == uid
                and pv["spec"].get("persistentVolumeReclaimPolicy") == "Retain"
                and (pv.get("status") or {}).get("phase") == "Bound"
            ):
                released = clone(pv)
                released["status"] = {"phase": "Released"}
                self.update_status("persistentvolumes", released)

    def _matches(self, pv: Obj, pvc: Obj) -> bool:
        if (pv.get("status") or {}).get("phase") != "Available" or pv["metadata"].get(
            "deletionTimestamp"
        ):
            return False
        claim_ref = pv["spec"].get("claimRef")
        if claim_ref and (claim_ref.get("name"), claim_ref.get("namespace")) != (
            pvc["metadata"]["name"],
            pvc["metadata"]["namespace"],
        ):
            return False
        wanted_pv = pvc["spec"].get("volumeName")
        if wanted_pv and wanted_pv != pv["metadata"]["name"]:
            return False
        if (pvc["spec"].get("storageClassName") or "") != (
            pv["spec"].get("storageClassName") or ""
        ):
            return False
        modes = set(pvc["spec"].get("accessModes") or [])
        if not modes <= set(pv["spec"].get("accessModes") or []):
            return False
        return _size(pv, "capacity.storage") >= _size(pvc, "resources.requests.storage")

    def bind(self, pvc: Obj) -> None:
        candidates = [pv for pv in self.store.items("persistentvolumes") if self._matches(pv, pvc)]
        if not candidates:
            pv = self._provision(pvc)
            if pv is None:
                return
            candidates = [pv]
        pv = clone(sorted(candidates, key=lambda v: _size(v, "capacity.storage"))[0])
        pv["spec"]["claimRef"] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "name": pvc["metadata"]["name"],
            "namespace": pvc["metadata"]["namespace"],
            "uid": pvc["metadata"]["uid"],
        }
        pv = self.update("persistentvolumes", pv)
        pv["status"] = {"phase": "Bound"}
        self.update_status("persistentvolumes", pv)
        pvc["spec"]["volumeName"] = pv["metadata"]["name"]
        pvc = self.update("persistentvolumeclaims", pvc)
        pvc["status"] = {
            "phase": "Bound",
            "accessModes": pv["spec"].get("accessModes"),
            "capacity": pv["spec"].get("capacity"),
        }
        self.update_status("persistentvolumeclaims", pvc)

    def _provision(self, pvc: Obj) -> Obj | None:
        class_name = pvc["spec"].get("storageClassName")
        if not class_name or pvc["spec"].get("volumeName"):
            return None
        sc = self.store.get("storageclasses.storage.k8s.io", "", class_name)
        if sc is None:
            return None
        driver = sc.get("provisioner", "")
        if self.store.get("csidrivers.storage.k8s.io", "", driver) is None:
            return None
        name = f"pvc-{pvc['metadata']['uid']}"
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
            "spec": {
                "capacity": {
                    "storage": ((pvc["spec"].get("resources") or {}).get("requests") or {}).get(
                        "storage", "1Gi"
                    )
                },
                "accessModes": pvc["spec"].get("accessModes") or ["ReadWriteOnce"],
                "storageClassName": class_name,
                "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy", "Delete"),
                "csi": {
                    "driver": driver,
                    "volumeHandle": name,
                    "volumeAttributes": dict(sc.get("parameters") or {}),
                },
            },
        }
        self.create("persistentvolumes", pv)
        self.event(pvc, "ProvisioningSucceeded", f"Successfully provisioned volume {name}")
        return self.store.get("persistentvolumes", "", name)
