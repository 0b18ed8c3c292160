"""The simulated account: service quotas, where each HyperPod instance type is offered, and
training plans with reserved capacity.

Quota codes of SageMaker's "<type> for cluster usage" quotas are derived from the quota name
(stable across runs); the EC2 On-Demand vCPU quotas keep AWS's real codes. New accounts get a
generous default for every quota so demos run; tests set the values they prove.
An instance type absent from `offerings` is offered in every Availability Zone of the region.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sim.aws.clock import utcnow
from sim.aws.errors import service_model

DEFAULT_CLUSTER_QUOTA = 16.0


def cluster_instance_types() -> list[str]:
    """The `ml.*` instance types HyperPod accepts, from botocore's model."""
    return list(service_model("sagemaker").shape_for("ClusterInstanceType").enum)


def cluster_quota_name(instance_type: str) -> str:
    return f"{instance_type} for cluster usage"


def quota_code_for(name: str) -> str:
    return "L-" + hashlib.sha1(name.encode()).hexdigest()[:8].upper()


@dataclass
class Quota:
    service_code: str
    service_name: str
    code: str
    name: str
    value: float
    default: float
    unit: str = "None"
    adjustable: bool = True


@dataclass
class ReservedCapacity:
    instance_type: str
    count: int
    availability_zone_id: str


@dataclass
class TrainingPlan:
    name: str
    arn: str
    status: str
    start_time: datetime
    duration_hours: int
    capacity: list[ReservedCapacity] = field(default_factory=list)
    target_resources: list[str] = field(default_factory=lambda: ["hyperpod-cluster"])
    upfront_fee: str = "0"

    @property
    def end_time(self) -> datetime:
        return self.start_time + timedelta(hours=self.duration_hours)

    def total(self, instance_type: str | None = None) -> int:
        return sum(c.count for c in self.capacity if instance_type in (None, c.instance_type))


_EC2_QUOTAS = [
    ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 1152.0),
    ("L-417A185B", "Running On-Demand P instances", 384.0),
    ("L-DB2E81BA", "Running On-Demand G and VT instances", 384.0),
    ("L-74FC7D96", "Running On-Demand Inf instances", 128.0),
    ("L-2C3B7624", "Running On-Demand Trn instances", 256.0),
]


class Account:
    """Quotas, offerings and training plans of the one simulated account."""

    def __init__(self, account_id: str, region: str) -> None:
        self.account_id = account_id
        self.region = region
        self._lock = threading.RLock()
        self.quotas: dict[tuple[str, str], Quota] = {}
        self.offerings: dict[str, list[str]] = {}
        self.training_plans: dict[str, TrainingPlan] = {}
        for instance_type in cluster_instance_types():
            name = cluster_quota_name(instance_type)
            self._add_quota(
                "sagemaker", "Amazon SageMaker", quota_code_for(name), name, DEFAULT_CLUSTER_QUOTA
            )
        for code, name, value in _EC2_QUOTAS:
            self._add_quota("ec2", "Amazon Elastic Compute Cloud (Amazon EC2)", code, name, value)

    def _add_quota(
        self, service: str, service_name: str, code: str, name: str, value: float
    ) -> None:
        self.quotas[(service, code)] = Quota(service, service_name, code, name, value, value)

    def find_quota(self, service_code: str, name_or_code: str) -> Quota | None:
        with self._lock:
            quota = self.quotas.get((service_code, name_or_code))
            if quota is not None:
                return quota
            for candidate in self.quotas.values():
                if candidate.service_code == service_code and candidate.name == name_or_code:
                    return candidate
            return None

    def set_quota(self, service_code: str, name_or_code: str, value: float) -> Quota:
        """Set a quota's applied value, by its name or its code."""
        with self._lock:
            quota = self.find_quota(service_code, name_or_code)
            if quota is None:
                raise KeyError(f"no quota {name_or_code!r} in service {service_code!r}")
            quota.value = float(value)
            return quota

    def cluster_quota(self, instance_type: str) -> Quota | None:
        return self.find_quota("sagemaker", cluster_quota_name(instance_type))

    def set_offering(self, instance_type: str, zone_ids: list[str]) -> None:
        """Offer `instance_type` only in these Availability Zone ids (e.g. use1-az2)."""
        with self._lock:
            self.offerings[instance_type] = list(zone_ids)

    def offered_in(self, instance_type: str, zone_id: str) -> bool:
        with self._lock:
            zones = self.offerings.get(instance_type)
            return zones is None or zone_id in zones

    def add_training_plan(
        self,
        name: str,
        capacity: list[ReservedCapacity],
        *,
        status: str = "Active",
        start_time: datetime | None = None,
        duration_hours: int = 24 * 14,
        target_resources: list[str] | None = None,
        upfront_fee: str = "0",
    ) -> TrainingPlan:
        """Add (or replace) a training plan with reserved capacity; returns it."""
        arn = f"arn:aws:sagemaker:{self.region}:{self.account_id}:training-plan/{name}"
        plan = TrainingPlan(
            name,
            arn,
            status,
            start_time or utcnow(),
            duration_hours,
            capacity,
            list(target_resources or ["hyperpod-cluster"]),
            upfront_fee,
        )
        with self._lock:
            self.training_plans[name] = plan
        return plan

    def training_plan(self, name_or_arn: str) -> TrainingPlan | None:
        with self._lock:
            for plan in self.training_plans.values():
                if name_or_arn in (plan.name, plan.arn):
                    return plan
            return None

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            quotas: dict[str, dict[str, dict[str, Any]]] = {}
            for quota in self.quotas.values():
                quotas.setdefault(quota.service_code, {})[quota.name] = {
                    "code": quota.code,
                    "value": quota.value,
                    "default": quota.default,
                }
            return {
                "account_id": self.account_id,
                "region": self.region,
                "quotas": quotas,
                "offerings": {k: list(v) for k, v in self.offerings.items()},
                "training_plans": [
                    {
                        "name": plan.name,
                        "arn": plan.arn,
                        "status": plan.status,
                        "start_time": plan.start_time.isoformat(),
                        "duration_hours": plan.duration_hours,
                        "reserved_capacity": [
                            {
                                "instance_type": c.instance_type,
                                "count": c.count,
                                "availability_zone_id": c.availability_zone_id,
                            }
                            for c in plan.capacity
                        ],
                    }
                    for plan in self.training_plans.values()
                ],
            }

    def update(self, body: dict[str, Any]) -> None:
        """Apply a partial account document (the shape `to_json` returns; quotas may be given
        as plain numbers, keyed by name or code)."""
        with self._lock:
            for service_code, entries in (body.get("quotas") or {}).items():
                for key, value in entries.items():
                    number = value["value"] if isinstance(value, dict) else value
                    self.set_quota(service_code, key, float(number))
            for instance_type, zones in (body.get("offerings") or {}).items():
                if zones is None:
                    self.offerings.pop(instance_type, None)
                else:
                    self.set_offering(instance_type, list(zones))
            for plan in body.get("training_plans") or []:
                start = plan.get("start_time")
                self.add_training_plan(
                    plan["name"],
                    [
                        ReservedCapacity(
                            c["instance_type"], int(c["count"]), c["availability_zone_id"]
                        )
                        for c in plan.get("reserved_capacity", [])
                    ],
                    status=plan.get("status", "Active"),
                    start_time=datetime.fromisoformat(start) if start else None,
                    duration_hours=int(plan.get("duration_hours", 24 * 14)),
                )
