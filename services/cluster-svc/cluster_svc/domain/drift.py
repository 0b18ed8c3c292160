"""Drift: what Hyperpilot recorded of a cluster against what AWS and Kubernetes say now.

Level-triggered: each observation compares the whole record with the whole actual state, so a
difference is found however it came about and whenever the watcher looks (a missed pass loses
nothing). The comparison is pure; the watcher (areas/drift.py) reads, and records/drift.py
stores the differences with their events. Nothing here changes AWS or Kubernetes: a difference
is reported, and the user accepts the actual value or restores the recorded one.

Compared: the HyperPod cluster (present, status), each instance group (present, instance type,
count: the target count HyperPod is working towards), each dependency component recorded
as present (EKS add-ons through DescribeAddon, manifest components through their objects), and
each available storage claim (its PersistentVolumeClaim and PersistentVolume in Kubernetes, its
S3 bucket through HeadBucket or FSx for Lustre file system through DescribeFileSystems).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.contracts.drift import DriftDetected, DriftResolved
from shared.contracts.events import Event

# Recorded component statuses that mean "it is there" (cluster_components.status).
PRESENT = frozenset({"installed", "upgraded", "unchanged", "degraded"})
ABSENT = "absent"


@dataclass(frozen=True)
class RecordedGroup:
    name: str
    instance_type: str
    count: int


@dataclass(frozen=True)
class Recorded:
    """A cluster as the read model holds it."""

    cluster: str
    hyperpod_cluster: str
    groups: Mapping[str, RecordedGroup]
    components: Mapping[str, Mapping[str, str]]  # name -> {version, status}
    claims: Mapping[str, RecordedClaim] = field(default_factory=dict)
    features: Mapping[str, bool] = field(default_factory=dict)  # feature -> recorded enabled


# What each watched managed feature leaves in AWS while it is on: an EKS add-on or an IAM role
# (the role's suffix, `identity.role_name(cluster, suffix)`). The training operator's add-on is
# in the dependency set, watched as the component it is (components.<name>).
FEATURE_ADDONS = {"spaces": "amazon-sagemaker-spaces"}
FEATURE_ROLES = {"tiered_checkpointing": "ckpt", "autoscaling": "autoscaler"}


def recorded_features(
    updates: Sequence[Mapping[str, Any]], accepted: Sequence[str]
) -> dict[str, bool]:
    """Each watched feature's recorded state: the last requested value of the FeaturesUpdated
    events (`changed`, in order), and off once a drift of it was accepted (`accepted`: the
    features of DriftAccepted fields, in order after the updates they followed)."""
    state: dict[str, bool] = {}
    for changed in updates:
        for key, change in changed.items():
            name, _, attribute = key.partition(".")
            if name not in FEATURE_ADDONS and name not in FEATURE_ROLES:
                continue
            if attribute in ("", "enabled") and isinstance(change, Mapping):
                state[name] = bool(change.get("requested"))
    for name in accepted:
        state[name] = False
    return state


def feature_differences(
    recorded: Mapping[str, bool], actual: Mapping[str, bool]
) -> dict[str, Difference]:
    """`features.<feature>.addon|role`: a feature recorded on whose add-on or role is gone."""
    found: dict[str, Difference] = {}
    for name, enabled in recorded.items():
        if not enabled or actual.get(name) is not False:
            continue
        what = "addon" if name in FEATURE_ADDONS else "role"
        found[f"features.{name}.{what}"] = Difference(PRESENT_VALUE, ABSENT)
    return found


@dataclass(frozen=True)
class RecordedClaim:
    """An available storage claim: what backs it and the PersistentVolume it is bound to."""

    claim: str
    kind: str  # s3 | fsx
    source: str  # default | existing | created
    bucket: str | None = None
    file_system_id: str | None = None
    volume: str | None = None


@dataclass(frozen=True)
class ActualClaim:
    """What an observation found of a claim; None: not read (nothing is concluded)."""

    claim_present: bool | None
    volume_present: bool | None
    source_present: bool | None


@dataclass(frozen=True)
class ActualGroup:
    instance_type: str
    count: int  # TargetCount (CurrentCount when HyperPod reports no target)


@dataclass(frozen=True)
class ActualComponent:
    version: str | None
    state: str  # absent | ready | busy | degraded | failed | external


@dataclass(frozen=True)
class Actual:
    """What one observation read. `groups` is None when the HyperPod cluster is gone;
    `components` is None when Kubernetes could not be read (nothing is concluded then)."""

    hyperpod_status: str | None
    groups: Mapping[str, ActualGroup] | None
    components: Mapping[str, ActualComponent] | None = None
    aws_calls: int = 0
    claims: Mapping[str, ActualClaim] | None = None
    features: Mapping[str, bool] | None = None  # feature -> its add-on or role is there


@dataclass(frozen=True)
class Difference:
    recorded: Any
    actual: Any

    def to_json(self) -> dict[str, Any]:
        return {"recorded": self.recorded, "actual": self.actual}


def differences(recorded: Recorded, actual: Actual) -> dict[str, Difference]:
    """Every field whose recorded and actual values differ, by field name."""
    found: dict[str, Difference] = {}
    if actual.hyperpod_status is None:
        found["hyperpod_cluster.status"] = Difference("InService", ABSENT)
    if actual.groups is not None:
        for name, group in recorded.groups.items():
            now = actual.groups.get(name)
            if now is None:
                found[f"instance_groups.{name}.present"] = Difference(True, False)
                continue
            if now.instance_type != group.instance_type:
                found[f"instance_groups.{name}.instance_type"] = Difference(
                    group.instance_type, now.instance_type
                )
            if now.count != group.count:
                found[f"instance_groups.{name}.count"] = Difference(group.count, now.count)
        for name, now in actual.groups.items():
            if name not in recorded.groups:
                found[f"instance_groups.{name}.present"] = Difference(
                    False, {"instance_type": now.instance_type, "count": now.count}
                )
    if actual.components is not None:
        for name, entry in recorded.components.items():
            if entry.get("status") not in PRESENT:
                continue  # still being installed, or failed: no claim to compare with
            seen = actual.components.get(name)
            if seen is None:
                continue  # not in this release's dependency set
            if seen.state == ABSENT:
                found[f"components.{name}"] = Difference(
                    {"version": entry.get("version"), "status": entry.get("status")},
                    {"status": ABSENT},
                )
            elif (
                seen.state != "external"
                and seen.version is not None
                and entry.get("version")
                and seen.version != entry.get("version")
            ):
                found[f"components.{name}"] = Difference(
                    {"version": entry.get("version"), "status": entry.get("status")},
                    {"version": seen.version, "status": seen.state},
                )
    if actual.claims is not None:
        found.update(claim_differences(recorded.claims, actual.claims))
    if actual.features is not None:
        found.update(feature_differences(recorded.features, actual.features))
    return found


PRESENT_VALUE = "present"


def claim_differences(
    recorded: Mapping[str, RecordedClaim], actual: Mapping[str, ActualClaim]
) -> dict[str, Difference]:
    """`storage.<claim>.claim|volume|bucket|file_system`: a claim's PVC, its PV, or what backs
    it, recorded and gone."""
    found: dict[str, Difference] = {}
    for name, claim in recorded.items():
        seen = actual.get(name)
        if seen is None:
            continue
        if seen.claim_present is False:
            found[f"storage.{name}.claim"] = Difference(PRESENT_VALUE, ABSENT)
        if seen.volume_present is False and claim.volume:
            found[f"storage.{name}.volume"] = Difference(claim.volume, ABSENT)
        if seen.source_present is False:
            if claim.kind == "s3":
                found[f"storage.{name}.bucket"] = Difference(claim.bucket, ABSENT)
            else:
                found[f"storage.{name}.file_system"] = Difference(claim.file_system_id, ABSENT)
    return found


@dataclass(frozen=True)
class DriftChanges:
    events: list[Event]
    upsert: dict[str, Difference] = field(default_factory=dict)  # new or changed rows
    resolved: list[str] = field(default_factory=list)  # rows to delete


def drift_changes(
    cluster: str, previous: Mapping[str, Difference], current: Mapping[str, Difference]
) -> DriftChanges:
    """The events and row changes between the stored differences and this observation's: a
    new or changed difference is a DriftDetected, one no longer there a DriftResolved."""
    events: list[Event] = []
    upsert: dict[str, Difference] = {}
    for name, diff in sorted(current.items()):
        if previous.get(name) != diff:
            events.append(
                DriftDetected(
                    cluster=cluster, field=name, recorded=diff.recorded, actual=diff.actual
                )
            )
            upsert[name] = diff
    resolved = sorted(name for name in previous if name not in current)
    events += [
        DriftResolved(cluster=cluster, field=name, value=previous[name].recorded)
        for name in resolved
    ]
    return DriftChanges(events, upsert, resolved)


def due(
    last_observed: float | None, last_calls: int, now: float, interval: float, budget: float
) -> bool:
    """Whether a cluster is observed on this pass: every `interval` seconds, but never faster
    than its AWS call budget (calls per cluster per hour) allows for what a pass costs."""
    if last_observed is None:
        return True
    spacing = max(interval, 3600.0 * last_calls / budget if budget > 0 else interval)
    return now - last_observed >= spacing - 1e-6
