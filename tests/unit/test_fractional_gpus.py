"""Fractional GPUs in the contracts and the plans: an instance group's MIG profile (only on
A100/H100/H200 types, only their profiles), jobs and endpoints asking for MIG partitions or HAMi
shares, rendered as the device plugins' resources and checked against the nodes' allocatable."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from inference_svc.domain.plan import ClusterFacts as EndpointFacts
from inference_svc.domain.plan import check_deploy
from inference_svc.domain.render import render as render_endpoint
from shared.contracts.cluster import InstanceGroupSpec
from shared.contracts.gpu import (
    MIG_PROFILES,
    accelerator_amounts,
    mig_config,
    node_fractions,
    partitions_per_gpu,
)
from shared.contracts.inference import EndpointSpec
from shared.contracts.workloads import JobSpec
from shared.errors import PermanentError
from workload_svc.domain.plan import ClusterFacts, GroupFacts, plan_submit
from workload_svc.domain.render import render

JOB: TypeAdapter[Any] = TypeAdapter(JobSpec)


def group(**fields: Any) -> InstanceGroupSpec:
    return InstanceGroupSpec.model_validate(
        {"name": "g", "instance_type": "ml.p5.48xlarge", "count": 1, **fields}
    )


def test_a_group_mig_profile_becomes_hyperpods_label_on_supported_types_only() -> None:
    g = group(mig_profile="mig-1g.10gb", labels={"team": "a"})
    assert g.kubernetes_labels() == {"team": "a", "nvidia.com/mig.config": "all-1g.10gb"}
    assert group(instance_type="ml.p4d.24xlarge", mig_profile="mig-1g.5gb").mig_profile
    assert group(instance_type="ml.p5en.48xlarge", mig_profile="mig-7g.141gb").mig_profile
    with pytest.raises(ValidationError, match="does not support MIG partitions"):
        group(instance_type="ml.g5.8xlarge", mig_profile="mig-1g.10gb")
    with pytest.raises(ValidationError, match=re.escape("not a MIG profile of ml.p5.48xlarge")):
        group(mig_profile="mig-1g.5gb")  # an A100 40GB profile
    with pytest.raises(ValidationError, match="contradicts mig_profile"):
        group(mig_profile="mig-1g.10gb", labels={"nvidia.com/mig.config": "all-2g.20gb"})
    # the label set by hand is held to the same rule
    with pytest.raises(ValidationError, match="does not support MIG"):
        group(instance_type="ml.g5.8xlarge", labels={"nvidia.com/mig.config": "all-1g.10gb"})
    assert group(labels={"nvidia.com/mig.config": "all-disabled"}).kubernetes_labels()
    with pytest.raises(ValidationError, match="mig_profile"):
        group(mig_profile="1g.10gb")  # the profile is named as HyperPod names it


def test_partitions_per_gpu_follow_nvidias_profile_table() -> None:
    assert partitions_per_gpu("ml.p5.48xlarge", "mig-1g.10gb") == 7
    assert partitions_per_gpu("ml.p4d.24xlarge", "mig-1g.10gb") == 4  # A100 40GB: the double 1g
    assert partitions_per_gpu("ml.p5.48xlarge", "mig-3g.40gb") == 2
    assert partitions_per_gpu("ml.p5e.48xlarge", "mig-7g.141gb") == 1
    assert partitions_per_gpu("ml.g5.8xlarge", "mig-1g.10gb") == 0
    assert mig_config(None) == "all-disabled" and mig_config("mig-2g.20gb") == "all-2g.20gb"
    assert set(MIG_PROFILES) == {
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
        "ml.p5.48xlarge",
        "ml.p5e.48xlarge",
        "ml.p5en.48xlarge",
    }


def test_job_resources_render_partitions_or_shares() -> None:
    def job(resources: dict[str, Any]) -> Any:
        return JOB.validate_python(
            {
                "recipe": "pytorch",
                "name": "j",
                "instance_group": "gpu",
                "script": "t.py",
                "resources": resources,
            }
        )

    body = render(job({"gpus": 2, "mig_profile": "mig-1g.10gb"})).body
    limits = json.dumps(body)
    assert '"nvidia.com/mig-1g.10gb": "2"' in limits and '"nvidia.com/gpu"' not in limits
    shared = render(job({"gpus": 1, "gpu_memory_mib": 20000, "gpu_cores": 30})).body
    text = json.dumps(shared)
    assert '"nvidia.com/gpumem": "20000"' in text and '"nvidia.com/gpucores": "30"' in text
    with pytest.raises(ValidationError, match="two kinds of fractional GPU"):
        job({"gpus": 1, "mig_profile": "mig-1g.10gb", "gpu_memory_mib": 1000})
    with pytest.raises(ValidationError, match="counts the MIG partitions"):
        job({"gpus": 0, "mig_profile": "mig-1g.10gb"})
    assert accelerator_amounts(0, None, None, None) == {}


def _job_facts(**group_fields: Any) -> ClusterFacts:
    base: dict[str, Any] = {
        "name": "gpu",
        "instance_type": "ml.p5.48xlarge",
        "nodes": 2,
        "gpus_per_node": 0,
        "efa_per_node": 32,
        "partitions": {"nvidia.com/mig-1g.10gb": 56},
    }
    return ClusterFacts(
        groups={"gpu": GroupFacts(**{**base, **group_fields})},
        storage=True,
        kinds=frozenset({"HyperPodPyTorchJob"}),
    )


def _submit(resources: dict[str, Any], facts: ClusterFacts) -> Any:
    spec = JOB.validate_python(
        {
            "recipe": "pytorch",
            "name": "j",
            "instance_group": "gpu",
            "script": "t.py",
            "resources": resources,
        }
    )
    return plan_submit("c", spec, facts)


def test_job_plans_check_partitions_and_shares_against_the_groups_nodes() -> None:
    assert not _submit({"gpus": 8, "mig_profile": "mig-1g.10gb"}, _job_facts()).noop
    with pytest.raises(PermanentError, match=re.escape("advertise no nvidia.com/mig-2g.20gb")):
        _submit({"gpus": 1, "mig_profile": "mig-2g.20gb"}, _job_facts())
    with pytest.raises(PermanentError, match=re.escape("57 nvidia.com/mig-1g.10gb per pod")):
        _submit({"gpus": 57, "mig_profile": "mig-1g.10gb"}, _job_facts())
    # whole GPUs asked of a partitioned group: the refusal says how to ask for partitions
    with pytest.raises(PermanentError, match="no whole GPU is left") as info:
        _submit({"gpus": 1}, _job_facts())
    assert "mig_profile" in info.value.hint
    with pytest.raises(PermanentError, match="HAMi does not share"):
        _submit({"gpus": 1, "gpu_memory_mib": 1000}, _job_facts(gpus_per_node=8, partitions={}))
    hami = _job_facts(gpus_per_node=80, partitions={}, hami_devices=8, hami_memory_mib=81920)
    assert not _submit({"gpus": 2, "gpu_memory_mib": 40000, "gpu_cores": 50}, hami).noop
    with pytest.raises(PermanentError, match="need 9 distinct GPUs"):
        _submit({"gpus": 9, "gpu_memory_mib": 1000}, hami)
    with pytest.raises(PermanentError, match="90000 MiB per virtual GPU"):
        _submit({"gpus": 1, "gpu_memory_mib": 90000}, hami)


def test_node_fractions_read_allocatable_and_hamis_registration() -> None:
    mig = {"status": {"allocatable": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"}}}
    fewer = {"status": {"allocatable": {"nvidia.com/mig-1g.10gb": "49"}}}
    assert node_fractions([mig, fewer]) == ({"nvidia.com/mig-1g.10gb": 49}, 0, 0)
    devices = [{"id": f"GPU-{i}", "count": 10, "devmem": 23028, "devcore": 100} for i in range(4)]
    hami = {
        "metadata": {"annotations": {"hami.io/node-nvidia-register": json.dumps(devices)}},
        "status": {"allocatable": {"nvidia.com/gpu": "40"}},
    }
    assert node_fractions([hami]) == ({}, 4, 23028)


def _endpoint(**fields: Any) -> EndpointSpec:
    return EndpointSpec.model_validate(
        {
            "name": "chat",
            "instance_type": "ml.p5.48xlarge",
            "gpus": 1,
            "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
            **fields,
        }
    )


def test_endpoints_request_partitions_and_are_checked_against_the_nodes() -> None:
    spec = _endpoint(mig_profile="mig-3g.40gb")
    worker = next(o for o in render_endpoint(spec) if o["kind"] == "Deployment")
    limits = worker["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/mig-3g.40gb": "1"}
    facts = EndpointFacts(
        cluster="c1",
        gpus_by_instance_type={"ml.p5.48xlarge": 0},
        served=frozenset(),
        partitions_by_instance_type={"ml.p5.48xlarge": {"nvidia.com/mig-3g.40gb": 16}},
    )
    check_deploy(spec, facts)
    with pytest.raises(PermanentError, match=re.escape("advertises nvidia.com/mig-1g.10gb")):
        check_deploy(_endpoint(mig_profile="mig-1g.10gb"), facts)
    with pytest.raises(PermanentError, match="exceed the 0 of one"):
        check_deploy(_endpoint(), facts)
    with pytest.raises(PermanentError, match="HAMi does not share"):
        check_deploy(_endpoint(gpu_memory_mib=1000), facts)
    with pytest.raises(ValidationError, match="JumpStartModel"):
        _endpoint(kind="jumpstart", jumpstart={"model_id": "m"}, mig_profile="mig-1g.10gb")
