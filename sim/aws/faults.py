"""Faults on demand: what AWS does on a bad day, reproducible in a test.

Request faults (`error`, `throttle`, `server_error`) fail matching API calls in the service's
own error shape; boto3's retries meet them as they would meet AWS's. With `phase="before"` (the
default) the call has no effect; with `phase="after"` the call takes effect and then answers the
error, as when a response is lost: a retry must cope with what the first attempt did. `insufficient_capacity` makes HyperPod provisioning of an instance type fail the way AWS
reports it (see sim.aws.hyperpod), or, with `mode="api"`, fails the call itself. `node_failure`
and `deep_health_check` act at once on a HyperPod cluster's nodes; the hardware faults
(`reboot_does_not_heal`, ...) stay with the instance (see sim.aws.hyperpod.hardware).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from sim.aws.errors import AwsError, server_error_code, throttling_code

REQUEST_KINDS = ("error", "throttle", "server_error")
CAPACITY_KIND = "insufficient_capacity"
ACTION_KINDS = (
    "node_failure",
    "deep_health_check",
    "reboot_does_not_heal",
    "deep_health_check_failure",
    "gpu_fell_off_bus",
    "efa_error",
)
KINDS = (*REQUEST_KINDS, CAPACITY_KIND, *ACTION_KINDS)


@dataclass
class Fault:
    """One injected fault. `times` None means until cleared."""

    id: str
    kind: str
    service: str | None = None
    operation: str | None = None
    times: int | None = 1
    code: str | None = None
    message: str | None = None
    status: int | None = None
    mode: str = "provision"
    phase: str = "before"
    instance_type: str | None = None
    availability_zone_id: str | None = None
    cluster: str | None = None
    node_ids: list[str] = field(default_factory=list)
    instance_group: str | None = None
    fired: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Action = Callable[[Fault], None]


class Faults:
    """The faults currently armed, and the actions that apply immediate ones."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[Fault] = []
        self._ids = itertools.count(1)
        self._actions: dict[str, Action] = {}

    def register_action(self, kind: str, action: Action) -> None:
        self._actions[kind] = action

    def inject(self, kind: str, **options: Any) -> Fault:
        """Arm a fault (or apply an immediate one) and return it.

        Options: service, operation, times, code, message, status (request faults);
        instance_type, availability_zone_id, mode ("provision" or "api") for
        insufficient_capacity; cluster, node_ids, instance_group for node faults.
        """
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}: use one of {', '.join(KINDS)}")
        known = set(Fault.__dataclass_fields__) - {"id", "kind", "fired"}
        unknown = set(options) - known
        if unknown:
            raise ValueError(f"unknown fault options: {', '.join(sorted(unknown))}")
        if kind == CAPACITY_KIND and "times" not in options:
            options["times"] = None
        if options.get("phase", "before") not in ("before", "after"):
            raise ValueError("phase must be 'before' or 'after'")
        fault = Fault(id=f"fault-{next(self._ids)}", kind=kind, **options)
        if kind in ACTION_KINDS:
            action = self._actions.get(kind)
            if action is None:
                raise ValueError(f"fault {kind!r} has nothing to act on")
            action(fault)
            fault.fired = 1
            return fault
        with self._lock:
            self._armed.append(fault)
        return fault

    def clear(self, fault_id: str | None = None) -> None:
        """Disarm one fault, or all of them."""
        with self._lock:
            self._armed = [f for f in self._armed if fault_id is not None and f.id != fault_id]

    def armed(self) -> list[Fault]:
        with self._lock:
            return list(self._armed)

    def _consume(self, fault: Fault) -> None:
        fault.fired += 1
        if fault.times is not None and fault.fired >= fault.times:
            self._armed.remove(fault)

    def request_error(
        self, service: str | None, operation: str | None, protocol: str, phase: str = "before"
    ) -> AwsError | None:
        """The error an armed request fault makes this call fail with, if any (consumes it)."""
        with self._lock:
            for fault in self._armed:
                if fault.kind not in (*REQUEST_KINDS, CAPACITY_KIND):
                    continue
                if fault.kind == CAPACITY_KIND and fault.mode != "api":
                    continue
                if fault.service not in (None, service) or fault.operation not in (None, operation):
                    continue
                if fault.phase != phase:
                    continue
                self._consume(fault)
                return _error_for(fault, service, protocol)
        return None

    def capacity_shortfall(
        self, instance_type: str, availability_zone_id: str | None
    ) -> Fault | None:
        """The armed provisioning fault that denies `instance_type` capacity, if any."""
        with self._lock:
            for fault in self._armed:
                if fault.kind != CAPACITY_KIND or fault.mode != "provision":
                    continue
                if fault.instance_type not in (None, instance_type):
                    continue
                if fault.availability_zone_id not in (None, availability_zone_id):
                    continue
                self._consume(fault)
                return fault
        return None


def _error_for(fault: Fault, service: str | None, protocol: str) -> AwsError:
    if fault.kind == "throttle":
        code = fault.code or throttling_code(service, protocol)
        return AwsError(code, fault.message or "Rate exceeded", fault.status)
    if fault.kind == "server_error":
        code = fault.code or server_error_code(service, protocol)
        status = fault.status or 500
        return AwsError(
            code, fault.message or "We encountered an internal error. Please try again.", status
        )
    if fault.kind == CAPACITY_KIND:
        kind = fault.instance_type or "the requested instance type"
        return AwsError(
            fault.code or "InsufficientInstanceCapacity",
            fault.message
            or f"We currently do not have sufficient {kind} capacity in the Availability Zone you "
            "requested. Our system will be working on provisioning additional capacity.",
            fault.status or (500 if service == "ec2" else 400),
        )
    return AwsError(
        fault.code or "ValidationException", fault.message or "Injected fault", fault.status
    )
