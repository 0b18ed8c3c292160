"""The emulator's persistent-volume binder as Kubernetes has it: a claim pre-bound to a Retain
volume binds; deleted (kubectl), the volume goes Released and keeps the old claim's uid, so a
new claim of the same name stays Pending until the volume is made again."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from subprocess import CompletedProcess

from sim.k8s.server import ApiServer
from tests.sim_k8s.conftest import eventually

PV = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "release-pv"},
    "spec": {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "",
        "claimRef": {"namespace": "default", "name": "release-claim"},
        "csi": {"driver": "s3.csi.aws.com", "volumeHandle": "release"},
    },
}
PVC = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "release-claim", "namespace": "default"},
    "spec": {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "",
        "resources": {"requests": {"storage": "10Gi"}},
        "volumeName": "release-pv",
    },
}


def _phase(cluster: ApiServer, kind: str, name: str, namespace: str = "") -> str | None:
    found = cluster.get("v1", kind, name, namespace)
    return None if found is None else (found.get("status") or {}).get("phase")


def test_a_retain_volume_is_released_when_its_claim_is_deleted(
    cluster: ApiServer, kubectl: Callable[..., CompletedProcess[str]]
) -> None:
    kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                  "items": [PV, PVC]}))  # fmt: skip
    eventually(
        lambda: _phase(cluster, "PersistentVolumeClaim", "release-claim", "default") == "Bound"
    )
    bound = cluster.get("v1", "PersistentVolume", "release-pv")
    assert bound is not None and bound["spec"]["claimRef"]["uid"]

    kubectl("delete", "pvc", "release-claim", "-n", "default")
    eventually(lambda: _phase(cluster, "PersistentVolume", "release-pv") == "Released")
    kubectl("apply", "-f", "-", stdin=json.dumps(PVC))
    eventually(
        lambda: _phase(cluster, "PersistentVolumeClaim", "release-claim", "default") == "Pending"
    )
    time.sleep(1.0)  # the binder has had its chance
    assert _phase(cluster, "PersistentVolumeClaim", "release-claim", "default") == "Pending"
    assert _phase(cluster, "PersistentVolume", "release-pv") == "Released"

    kubectl("delete", "pv", "release-pv")
    kubectl("apply", "-f", "-", stdin=json.dumps(PV))
    eventually(
        lambda: _phase(cluster, "PersistentVolumeClaim", "release-claim", "default") == "Bound"
    )
    kubectl("delete", "pvc", "release-claim", "-n", "default")
    kubectl("delete", "pv", "release-pv")
