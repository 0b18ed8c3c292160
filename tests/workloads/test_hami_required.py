"""A job asking for a HAMi share (gpu_memory_mib, gpu_cores) on a cluster where HAMi is not
installed is refused on that field with the way to install it; whole GPUs and MIG partitions
are not affected."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from shared.contracts.workloads import SubmitJob
from shared.errors import PermanentError
from workload_svc.domain.plan import ClusterFacts, GroupFacts, plan_submit

FACTS = ClusterFacts(
    groups={
        "gpu": GroupFacts("gpu", "ml.p5.48xlarge", 1, 80, 32, hami_devices=8, hami_memory_mib=81920)
    },
    storage=True,
    kinds=frozenset({"HyperPodPyTorchJob"}),
)


def _submit(resources: dict[str, Any], facts: ClusterFacts) -> Any:
    spec = {
        "recipe": "pytorch",
        "name": "j",
        "instance_group": "gpu",
        "script": "t.py",
        "resources": resources,
    }
    return plan_submit("c", SubmitJob(cluster="c", region="us-east-1", spec=spec).spec, facts)


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ({"gpus": 1, "gpu_memory_mib": 4000}, "resources.gpu_memory_mib"),
        ({"gpus": 1, "gpu_cores": 30}, "resources.gpu_cores"),
    ],
)
def test_a_share_without_hami_is_refused_with_the_way_to_install_it(
    resources: dict[str, Any], field: str
) -> None:
    without = dataclasses.replace(FACTS, hami_installed=False)
    with pytest.raises(PermanentError) as refused:
        _submit(resources, without)
    assert refused.value.message.startswith(f"{field}: HAMi is not installed")
    assert '{"hami": true}' in (refused.value.hint or "")
    assert "--hami" in (refused.value.hint or "")


def test_whole_gpus_need_no_hami_and_an_installed_hami_takes_shares() -> None:
    without = dataclasses.replace(FACTS, hami_installed=False)
    assert not _submit({"gpus": 1}, without).noop
    installed = dataclasses.replace(FACTS, hami_installed=True)
    assert not _submit({"gpus": 1, "gpu_memory_mib": 4000}, installed).noop
