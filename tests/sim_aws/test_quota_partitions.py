"""MIG partitions in a compute quota (AcceleratorPartitionConfig): the profile must be one the
instance type's GPUs can be partitioned into, partitions stand in for whole GPUs, and the add-on
renders them as the device plugin's MIG resource with vCPUs and memory in proportion. The rule
and the arithmetic alone; tests/sim_k8s/test_kueue_pods.py shows Kueue admitting by them."""

from __future__ import annotations

import pytest

from sim.aws.errors import AwsError
from sim.aws.task_governance import TaskGovernance
from sim.governance import QuotaResource
from sim.k8s.operators.task_governance import amounts

AT = "ComputeQuotaConfig.ComputeQuotaResources.1 (ml.p4d.24xlarge)"


def refusal(partition: dict[str, object], **res: object) -> str:
    with pytest.raises(AwsError) as caught:
        TaskGovernance._check_partition("ml.p4d.24xlarge", partition, dict(res), AT)
    assert caught.value.code == "ValidationException"
    return str(caught.value.message)


def test_a_profile_of_another_gpu_is_refused_naming_the_type_s_profiles() -> None:
    # mig-3g.40gb is an 80 GB GPU's profile; ml.p4d.24xlarge has A100 40 GB GPUs
    assert refusal({"Type": "mig-3g.40gb", "Count": 2}) == (
        f"{AT}: AcceleratorPartition.Type mig-3g.40gb is not a MIG profile of ml.p4d.24xlarge: "
        "use one of mig-1g.5gb, mig-1g.10gb, mig-2g.10gb, mig-3g.20gb, mig-4g.20gb, mig-7g.40gb."
    )


def test_partitions_and_whole_gpus_are_not_given_together() -> None:
    message = refusal({"Type": "mig-1g.5gb", "Count": 7}, Accelerators=2)
    assert "cannot be combined with Accelerators" in message
    TaskGovernance._check_partition("ml.p4d.24xlarge", {"Type": "mig-1g.5gb", "Count": 7}, {}, AT)


def test_partitions_render_as_the_mig_resource_with_proportional_cpu_and_memory() -> None:
    # 14 of 8 x 7 = 56 partitions of mig-1g.5gb: a quarter of the instance's 96 vCPUs, 1152 GiB
    got = amounts(QuotaResource("ml.p4d.24xlarge", mig_profile="mig-1g.5gb", mig_count=14))
    assert got == {
        "cpu": 24.0,
        "memory": 288.0 * 1024**3,
        "nvidia.com/gpu": 0.0,
        "aws.amazon.com/neuron": 0.0,
        "nvidia.com/mig-1g.5gb": 14.0,
    }
