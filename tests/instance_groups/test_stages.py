"""The workflow stages with fakes: a noop makes no call, a change makes exactly one, an add in
another zone gets its /20 through the one compute-subnet function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cluster_svc.domain.instance_groups.described import DescribedCluster
from cluster_svc.domain.instance_groups.stages import (
    add_stages,
    delete_stages,
    software_stages,
    update_stages,
)
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    DeleteInstanceGroup,
    InstanceGroupChange,
    NewInstanceGroup,
    SoftwareUpdateSpec,
    UpdateClusterSoftware,
    UpdateInstanceGroup,
)
from shared.errors import PermanentError, TemporaryError
from shared.stages import Done
from tests.cluster_network.fakes import FakeEc2
from tests.cluster_network.helpers import by_name, drive
from tests.instance_groups.fakes import PLAN, FakeHyperPod, cluster, details


class FakeReads:
    """The account reads of the add checks: every type offered everywhere, no quotas."""

    region = "us-east-1"

    def __init__(
        self,
        offered: Sequence[str] = ("use1-az2", "use1-az4", "use1-az6"),
        quotas: dict[str, dict[str, Any]] | None = None,
        usage: dict[str, int] | None = None,
        plans: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.offered = list(offered)
        self.quotas = quotas or {}
        self.usage = usage or {}
        self.plans = plans or {}

    async def availability_zones(self) -> list[dict[str, Any]]:
        return [{"zone_id": z, "zone_name": z} for z in ("use1-az2", "use1-az4", "use1-az6")]

    async def offered_zone_ids(self, instance_types: Sequence[str]) -> dict[str, list[str]]:
        return {t: self.offered for t in instance_types}

    async def cluster_quotas(self, instance_types: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {t: q for t, q in self.quotas.items() if t in instance_types}

    async def cluster_usage(self) -> dict[str, int]:
        return dict(self.usage)

    async def training_plan(self, arn: str) -> dict[str, Any] | None:
        return self.plans.get(arn)

    async def cluster_name_holders(self, name: str) -> list[str]:
        return []

    async def vpc_exists(self, vpc_id: str) -> bool:
        return True


def _update(**fields: Any) -> dict[str, Any]:
    return UpdateInstanceGroup(
        cluster="one",
        hyperpod_cluster="hp-one",
        region="us-east-1",
        group="gpu",
        change=InstanceGroupChange(**fields),
    ).model_dump(mode="json")


async def test_an_update_with_the_actual_values_makes_no_call() -> None:
    api = FakeHyperPod()
    stage = by_name(update_stages(api, FakeEc2(), FakeReads()))["update_group"]
    done = await drive(stage, _update(count=2, labels={"team": "nlp"}, capacity_type="spot"))
    assert done.noop and api.updates == []


async def test_a_scale_makes_one_update_and_waits_for_the_count() -> None:
    api = FakeHyperPod()
    stage = by_name(update_stages(api, FakeEc2(), FakeReads()))["update_group"]
    done = await drive(stage, _update(count=4))
    assert not done.noop
    assert len(api.updates) == 1
    assert done.outputs["diff"] == {"count": {"actual": 2, "requested": 4}}
    assert done.outputs["target_count"] == 4


async def test_a_capacity_type_change_fails_before_any_call() -> None:
    api = FakeHyperPod()
    stage = by_name(update_stages(api, FakeEc2(), FakeReads()))["update_group"]
    with pytest.raises(PermanentError) as refused:
        await drive(stage, _update(capacity_type="on-demand"))
    assert refused.value.code == "InstanceGroupChangeRefused"
    assert "fixed for the life of a group" in (refused.value.hint or "")
    assert api.updates == []


async def test_a_busy_cluster_is_waited_for() -> None:
    api = FakeHyperPod(cluster(details(), status="Updating"))
    stage = by_name(update_stages(api, FakeEc2(), FakeReads()))["update_group"]
    with pytest.raises(TemporaryError):
        await drive(stage, _update(count=3))
    assert api.updates == []


async def test_delete_and_software_update() -> None:
    api = FakeHyperPod(cluster(details(), details("cpu")))
    delete = by_name(delete_stages(api))["delete_group"]
    command = DeleteInstanceGroup(
        cluster="one", hyperpod_cluster="hp-one", region="us-east-1", group="cpu"
    ).model_dump(mode="json")
    assert not (await drive(delete, command)).noop
    assert api.updates == [{"ClusterName": "hp-one", "InstanceGroupsToDelete": ["cpu"]}]
    assert (await drive(delete, command)).noop  # already gone
    software = by_name(software_stages(api))["update_software"]
    update = UpdateClusterSoftware(
        cluster="one", hyperpod_cluster="hp-one", region="us-east-1", spec=SoftwareUpdateSpec()
    ).model_dump(mode="json")
    done = await drive(software, update)
    assert done.outputs["instance_groups"] == ["gpu"]
    assert len(api.software) == 1


async def _add_command(ec2: FakeEc2, zone: str | None) -> tuple[dict[str, Any], FakeHyperPod]:
    """A cluster whose own subnet is in use1-az2, and an add of group `far` (in `zone`)."""
    vpc = await ec2.create_vpc("10.1.0.0/16", {})
    home = ec2.add_subnet(vpc.vpc_id, "10.1.16.0/20", "use1-az2", {})
    api = FakeHyperPod(
        DescribedCluster(
            name="hp-one",
            arn="arn:aws:sagemaker:us-east-1:111122223333:cluster/abc",
            status="InService",
            vpc_config={"SecurityGroupIds": ["sg-1"], "Subnets": [home.subnet_id]},
            groups={"gpu": details()},
        )
    )
    group: dict[str, Any] = {"name": "far", "instance_type": "ml.c5.xlarge", "count": 1}
    if zone:
        group["availability_zone_id"] = zone
    command = AddInstanceGroup(
        cluster="one",
        hyperpod_cluster="hp-one",
        region="us-east-1",
        group=NewInstanceGroup.model_validate(group),
        cluster_zone_id="use1-az2",
    ).model_dump(mode="json")
    return command, api


async def _run_add(
    ec2: FakeEc2, api: FakeHyperPod, command: dict[str, Any], reads: FakeReads
) -> dict[str, Done]:
    stages = by_name(add_stages(api, ec2, reads))
    outputs: dict[str, Done] = {}
    for name in ("validate", "compute_subnet", "add_group"):
        outputs[name] = await drive(
            stages[name], command, {k: v.outputs for k, v in outputs.items()}
        )
    return outputs


async def test_a_group_in_another_zone_gets_a_compute_subnet_there() -> None:
    ec2 = FakeEc2()
    command, api = await _add_command(ec2, "use1-az6")
    done = await _run_add(ec2, api, command, FakeReads())
    subnet = done["compute_subnet"].outputs
    assert subnet["availability_zone_id"] == "use1-az6" and subnet["created"] == [
        subnet["subnet_id"]
    ]
    made = await ec2.subnet(subnet["subnet_id"])
    assert made is not None and made.cidr.endswith("/20") and made.zone_id == "use1-az6"
    [request] = api.updates
    entry = request["InstanceGroups"][0]
    assert entry["OverrideVpcConfig"] == {
        "SecurityGroupIds": ["sg-1"],
        "Subnets": [subnet["subnet_id"]],
    }
    assert set(request) == {"ClusterName", "InstanceGroups"}


async def test_a_group_in_the_cluster_zone_uses_the_cluster_subnets() -> None:
    ec2 = FakeEc2()
    command, api = await _add_command(ec2, "use1-az2")
    done = await _run_add(ec2, api, command, FakeReads())
    assert done["compute_subnet"].noop
    assert "OverrideVpcConfig" not in api.updates[0]["InstanceGroups"][0]
    assert ec2.calls["create_subnet"] == 0


async def test_an_add_where_the_type_is_not_offered_fails_before_anything_is_made() -> None:
    ec2 = FakeEc2()
    command, api = await _add_command(ec2, "use1-az6")
    with pytest.raises(PermanentError) as refused:
        await _run_add(ec2, api, command, FakeReads(offered=["use1-az2"]))
    assert "instance_type" in refused.value.message and "use1-az2" in (refused.value.hint or "")
    assert api.updates == [] and ec2.calls["create_subnet"] == 0


async def _placed(ec2: FakeEc2, group: dict[str, Any]) -> FakeHyperPod:
    vpc = await ec2.create_vpc("10.1.0.0/16", {})
    home = ec2.add_subnet(vpc.vpc_id, "10.1.16.0/20", "use1-az2", {})
    return FakeHyperPod(
        DescribedCluster(
            name="hp-one",
            arn="arn:aws:sagemaker:us-east-1:111122223333:cluster/abc",
            status="InService",
            vpc_config={"SecurityGroupIds": ["sg-1"], "Subnets": [home.subnet_id]},
            groups={"gpu": group},
        )
    )


async def test_a_scale_beyond_the_quota_is_refused_before_the_call() -> None:
    ec2 = FakeEc2()
    api = await _placed(ec2, details())
    reads = FakeReads(
        quotas={"ml.g5.8xlarge": {"value": 3, "quota_name": "ml.g5.8xlarge for cluster usage"}},
        usage={"ml.g5.8xlarge": 2},
    )
    stage = by_name(update_stages(api, ec2, reads))["update_group"]
    with pytest.raises(PermanentError) as refused:
        await drive(stage, _update(count=4))
    assert "from 2 to 4 adds 2" in refused.value.message
    assert "Service Quotas" in (refused.value.hint or "")
    assert api.updates == []
    assert not (await drive(stage, _update(count=3))).noop  # fits: 2 + 1 <= 3
    assert len(api.updates) == 1


async def test_a_training_plan_group_scales_within_the_plan() -> None:
    ec2 = FakeEc2()
    on_plan = details(TrainingPlanArn=PLAN)
    del on_plan["CapacityRequirements"]
    api = await _placed(ec2, on_plan)
    plan = {
        "name": "plan-a",
        "status": "Active",
        "available_instance_count": 1,
        "reserved_capacity": [
            {"instance_type": "ml.g5.8xlarge", "count": 4, "availability_zone_id": "use1-az2"}
        ],
    }
    stage = by_name(update_stages(api, ec2, FakeReads(plans={PLAN: plan})))["update_group"]
    with pytest.raises(PermanentError) as refused:
        await drive(stage, _update(count=4))
    assert "1 ml.g5.8xlarge available" in refused.value.message
    assert api.updates == []


async def test_efa_only_needs_an_instance_type_with_efa() -> None:
    ec2 = FakeEc2()
    command, api = await _add_command(ec2, "use1-az2")
    command["group"]["interface_type"] = "efa-only"
    with pytest.raises(PermanentError) as refused:
        await _run_add(ec2, api, command, FakeReads())
    assert "interface_type" in refused.value.message and "efa" in (refused.value.hint or "")
    assert api.updates == []
    command["group"]["instance_type"] = "ml.g5.8xlarge"
    await _run_add(ec2, api, command, FakeReads())
    [request] = api.updates
    assert request["InstanceGroups"][0]["NetworkInterface"] == {"InterfaceType": "efa-only"}
