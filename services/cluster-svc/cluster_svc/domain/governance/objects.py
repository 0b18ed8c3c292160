"""What a team's namespace gets besides what task governance makes: the cluster's shared bucket
as a claim `s3-claim`, as the `default` namespace has it (cluster_svc.domain.kube_storage), so a
team's jobs mount the bucket at /s3 like every job. A PersistentVolume binds one claim, so each
team has its own volume of the same bucket, pre-bound to the team's claim (static provisioning
of the Mountpoint for S3 CSI driver,
https://docs.aws.amazon.com/eks/latest/userguide/s3-csi.html)."""

from __future__ import annotations

from cluster_svc.domain.components.base import KubeObject, labelled
from cluster_svc.domain.kube_storage import S3_CAPACITY, S3_CLAIM, S3_DRIVER
from shared.boundary import team_namespace

COMPONENT = "team-storage"
VERSION = "1"


def team_volume_name(bucket: str, team: str) -> str:
    return f"s3-{bucket}-{team}"[:253]


def team_volume(bucket: str, region: str, team: str) -> list[KubeObject]:
    """The team's PersistentVolume of the bucket and its claim, in the team's namespace."""
    namespace = team_namespace(team)
    name = team_volume_name(bucket, team)
    volume: KubeObject = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": S3_CAPACITY},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": ["allow-delete", f"region {region}"],
            "claimRef": {"namespace": namespace, "name": S3_CLAIM},
            "csi": {
                "driver": S3_DRIVER,
                "volumeHandle": f"s3-csi-{bucket}-{team}",
                "volumeAttributes": {"bucketName": bucket},
            },
        },
    }
    claim: KubeObject = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": S3_CLAIM, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "resources": {"requests": {"storage": S3_CAPACITY}},
            "volumeName": name,
        },
    }
    return [labelled(volume, COMPONENT, VERSION), labelled(claim, COMPONENT, VERSION)]
