"""Hardware faults of HyperPod instances: what each one looks like and what clears it.

A fault stays with the instance it was injected on (a replacement is a new instance and comes
up healthy). Where the real services show it:
- DescribeClusterNode / ListClusterNodes: InstanceStatus `Failure` with the fault's message.
- Kubernetes: the node-health-status label asks for what HyperPod's health-monitoring agent
  would do (`UnschedulablePendingReboot` or `UnschedulablePendingReplacement`), the
  deep-health-check-status label is `Failed` when a deep health check found it, and the
  fault-type / fault-reason labels name it; per "Resilience-related Kubernetes labels by
  SageMaker HyperPod" (docs.aws.amazon.com/sagemaker/latest/dg/
  sagemaker-hyperpod-eks-resiliency-node-labels.html). The label values of fault-type and
  fault-reason are the simulator's.
- A Warning event on the Node with the agent's reason and the kernel's line (an Xid 79 for a
  GPU that fell off the bus), and an Error HyperPod cluster event.
With NodeRecovery=Automatic HyperPod does what the label asks; a reboot that does not heal
escalates to a replacement.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class HardwareFault:
    kind: str
    reason: str  # the Kubernetes event reason the health agent records
    message: str  # what the kernel / health agent / deep health check says
    fault_type: str
    fault_reason: str
    needs_replacement: bool  # the agent asks for a replacement (else a reboot)
    heals_on_reboot: bool
    latent: bool = False  # shows only when a deep health check runs
    found_by_health_check: bool = False


CATALOGUE: dict[str, HardwareFault] = {
    "reboot_does_not_heal": HardwareFault(
        kind="reboot_does_not_heal",
        reason="GpuXidError",
        message="NVRM: Xid (PCI:0000:53:00): 48, pid=<unknown>, name=<unknown>, An uncorrectable"
        " double bit error (DBE) has been detected on GPU in the framebuffer at partition 0",
        fault_type="GpuHealth",
        fault_reason="XidError48",
        needs_replacement=False,
        heals_on_reboot=False,
    ),
    "gpu_fell_off_bus": HardwareFault(
        kind="gpu_fell_off_bus",
        reason="GpuXidError",
        message="NVRM: Xid (PCI:0000:a8:00): 79, pid=<unknown>, name=<unknown>, GPU has fallen"
        " off the bus.",
        fault_type="GpuHealth",
        fault_reason="XidError79",
        needs_replacement=True,
        heals_on_reboot=False,
    ),
    "efa_error": HardwareFault(
        kind="efa_error",
        reason="EfaError",
        message="EFA device rdmap16s27: admin command timed out; the device stopped responding",
        fault_type="NetworkHealth",
        fault_reason="EfaDeviceError",
        needs_replacement=False,
        heals_on_reboot=True,
    ),
    "deep_health_check_failure": HardwareFault(
        kind="deep_health_check_failure",
        reason="DeepHealthCheckFailed",
        message="Deep health check failed: DCGM diagnostics level 4 found memory errors on GPU 2",
        fault_type="GpuHealth",
        fault_reason="DcgmDiagnosticFailure",
        needs_replacement=True,
        heals_on_reboot=False,
        latent=True,
    ),
}


def fault_of(kind: str, message: str | None) -> HardwareFault:
    """The catalogue's fault of `kind`, with `message` instead of its own when given."""
    fault = CATALOGUE[kind]
    return fault if message is None else replace(fault, message=message)


def after_reboot(fault: HardwareFault) -> HardwareFault | None:
    """What is left after a reboot: nothing if it heals, else the fault, now asking for a
    replacement (a reboot did not help)."""
    return None if fault.heals_on_reboot else replace(fault, needs_replacement=True)


def found(fault: HardwareFault) -> HardwareFault:
    """The fault as a deep health check reports it."""
    return replace(fault, latent=False, found_by_health_check=True)
