"""The lifecycle script every HyperPod node runs once when it is created, and where it lives.

HyperPod downloads everything under `LifeCycleConfig.SourceS3Uri` to the new node and runs
`OnCreate` from there as root. On an EKS-orchestrated cluster the node joins Kubernetes by
itself; what is left to do is give containerd (images) and kubelet (pod volumes) the large disk
instead of the small root volume, since model images and checkpoints fill the root volume fast.
"""

from __future__ import annotations

import hashlib

ON_CREATE = "on_create.sh"
PREFIX = "hyperpod/lifecycle/"
SCRIPT_KEY = PREFIX + ON_CREATE

ON_CREATE_SCRIPT = r"""#!/bin/bash
# HyperPod runs this once per new node (LifeCycleConfig.OnCreate), as root.
# It moves containerd's and kubelet's state onto the instance's large disk: the NVMe instance
# store when the AMI mounted one, else the EBS volume of InstanceStorageConfigs (/opt/sagemaker).
set -euo pipefail

LOG=/var/log/provision/provisioning.log
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "[start] on_create.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"

DISK=""
for attempt in $(seq 1 12); do
  for candidate in /opt/dlami/nvme /opt/sagemaker; do
    if mountpoint -q "$candidate"; then
      DISK="$candidate"
      break 2
    fi
  done
  echo "waiting for a data disk to be mounted ($attempt/12)"
  sleep 5
done

if [[ -z "$DISK" ]]; then
  echo "no data disk is mounted: containerd and kubelet stay on the root volume"
else
  echo "moving containerd and kubelet state to $DISK"
  stopped=()
  for unit in kubelet containerd; do
    if systemctl is-active --quiet "$unit"; then
      systemctl stop "$unit"
      stopped+=("$unit")
    fi
  done
  for dir in /var/lib/containerd /var/lib/kubelet; do
    target="$DISK$dir"
    mkdir -p "$dir" "$target"
    if ! mountpoint -q "$dir"; then
      cp -a "$dir/." "$target/"
      grep -qs " $dir none bind" /etc/fstab || echo "$target $dir none bind 0 0" >> /etc/fstab
      mount --bind "$target" "$dir"
    fi
  done
  for unit in containerd kubelet; do
    if [[ " ${stopped[*]:-} " == *" $unit "* ]]; then
      systemctl start "$unit"
    fi
  done
fi

echo "[stop] on_create.sh"
"""


def script_body() -> bytes:
    return ON_CREATE_SCRIPT.encode()


def script_md5() -> str:
    """The ETag S3 gives a single-part upload of the script: tells whether it is current."""
    return hashlib.md5(script_body(), usedforsecurity=False).hexdigest()


def source_uri(bucket: str) -> str:
    """The S3 prefix HyperPod's LifeCycleConfig.SourceS3Uri takes (OnCreate is relative to it)."""
    return f"s3://{bucket}/{PREFIX}"
