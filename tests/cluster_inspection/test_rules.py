"""The pre-create rules as pure functions, and check_create against a fake of the account."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cluster_svc.domain.inspection import (
    Problem,
    check_create,
    ec2_instance_type,
    human_list,
    hyperpod_instance_type,
    is_managed,
    problems_summary,
)
from tests.cluster_inspection.conftest import spec

PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"
ZONES = [
    {"zone_name": f"us-east-1{letter}", "zone_id": zone_id}
    for letter, zone_id in zip(
        "abcdef",
        ("use1-az6", "use1-az1", "use1-az2", "use1-az4", "use1-az3", "use1-az5"),
        strict=True,
    )
]


class FakeAccount:
    """The reads of check_create, answered from fields a test sets."""

    region = "us-east-1"
    served = ("us-east-1",)

    def __init__(self) -> None:
        self.zones = list(ZONES)
        self.offerings: dict[str, list[str]] = {
            "ml.p5.48xlarge": ["use1-az2", "use1-az5"],
            "ml.g5.8xlarge": ["use1-az1", "use1-az2", "use1-az3"],
        }
        self.quotas: dict[str, float] = {"ml.p5.48xlarge": 8, "ml.g5.8xlarge": 8}
        self.usage: dict[str, int] = {}
        self.plans: dict[str, dict[str, Any]] = {}
        self.names: dict[str, list[str]] = {}
        self.vpcs: set[str] = set()
        self.asked: list[str] = []

    async def availability_zones(self) -> list[dict[str, Any]]:
        return self.zones

    async def offered_zone_ids(self, instance_types: Sequence[str]) -> dict[str, list[str]]:
        return {t: self.offerings.get(t, []) for t in instance_types}

    async def cluster_quotas(self, instance_types: Sequence[str]) -> dict[str, dict[str, Any]]:
        self.asked.append("quotas")
        return {
            t: {"quota_name": f"{t} for cluster usage", "value": self.quotas[t]}
            for t in instance_types
            if t in self.quotas
        }

    async def cluster_usage(self) -> dict[str, int]:
        self.asked.append("usage")
        return self.usage

    async def training_plan(self, arn: str) -> dict[str, Any] | None:
        return self.plans.get(arn)

    async def cluster_name_holders(self, name: str) -> list[str]:
        return self.names.get(name, [])

    async def vpc_exists(self, vpc_id: str) -> bool:
        return vpc_id in self.vpcs


def plan(status: str = "Active", available: int = 4, **capacity: int) -> dict[str, Any]:
    return {
        "name": "p5-reserved",
        "status": status,
        "available_instance_count": available,
        "reserved_capacity": [
            {
                "instance_type": "ml.p5.48xlarge",
                "count": n,
                "availability_zone_id": z.replace("_", "-"),
            }
            for z, n in (capacity or {"use1_az2": 4}).items()
        ],
    }


def p5(count: int, **extra: Any) -> dict[str, Any]:
    return {"instance_type": "ml.p5.48xlarge", "count": count, **extra}


def on_plan(count: int, **extra: Any) -> dict[str, Any]:
    return p5(count, capacity_type="training-plan", training_plan_arn=PLAN, **extra)


async def problems_of(account: FakeAccount, **groups: Any) -> list[Problem]:
    return await check_create(account, spec(**groups), "us-east-1")


def test_ml_types_map_to_ec2_types_by_their_prefix() -> None:
    assert ec2_instance_type("ml.p5.48xlarge") == "p5.48xlarge"
    assert ec2_instance_type("ml.p6e-gb200.36xlarge") == "p6e-gb200.36xlarge"
    assert hyperpod_instance_type("trn1n.32xlarge") == "ml.trn1n.32xlarge"
    with pytest.raises(ValueError, match="not a HyperPod"):
        ec2_instance_type("p5.48xlarge")


def test_lists_read_like_a_person_wrote_them() -> None:
    assert human_list([]) == ""
    assert human_list(["use1-az2"]) == "use1-az2"
    assert human_list(["use1-az2", "use1-az5"]) == "use1-az2 and use1-az5"
    assert human_list(["a", "b", "c"]) == "a, b and c"


def test_managed_means_tagged_by_this_control_plane() -> None:
    assert is_managed({"managed-by": "hyperpilot"})
    assert not is_managed({"managed-by": "terraform"})
    assert not is_managed({})


async def test_a_good_spec_has_no_problems() -> None:
    account = FakeAccount()
    account.plans[PLAN] = plan()
    assert await problems_of(account, workers=p5(2), reserved=on_plan(4)) == []


async def test_a_type_not_offered_in_the_zone_says_where_it_is() -> None:
    [problem] = await check_create(FakeAccount(), spec(zone="use1-az3", gpu=p5(1)), "us-east-1")
    assert problem == Problem(
        "instance_groups[0].instance_type",
        "instance_type_offered",
        "ml.p5.48xlarge is not offered in use1-az3; it is offered in use1-az2 and use1-az5",
        "set availability_zone_id to one of use1-az2 and use1-az5",
    )


async def test_a_group_zone_overrides_the_cluster_zone() -> None:
    problems = await problems_of(
        FakeAccount(),
        cpu={"instance_type": "ml.g5.8xlarge", "count": 1},
        gpu=p5(1, availability_zone_id="use1-az1"),
    )
    assert [(p.field, p.message) for p in problems] == [
        (
            "instance_groups[1].instance_type",
            "ml.p5.48xlarge is not offered in use1-az1; it is offered in use1-az2 and use1-az5",
        )
    ]


async def test_a_type_offered_nowhere_suggests_another_type() -> None:
    account = FakeAccount()
    account.offerings["ml.p5.48xlarge"] = []
    [problem] = await problems_of(account, gpu=p5(1))
    assert problem.message == "ml.p5.48xlarge is not offered in any zone of this region"
    assert "instance-types" in problem.hint


async def test_a_zone_outside_the_region_lists_the_region_zones() -> None:
    [problem] = await check_create(FakeAccount(), spec(zone="use1-az9"), "us-east-1")
    assert problem.field == "availability_zone_id" and problem.rule == "zone_exists"
    assert problem.message == "use1-az9 is not an Availability Zone of us-east-1"
    assert (
        problem.hint == "use one of use1-az1, use1-az2, use1-az3, use1-az4, use1-az5 and use1-az6"
    )


async def test_quota_counts_every_group_of_the_type() -> None:
    account = FakeAccount()
    account.quotas["ml.p5.48xlarge"] = 2
    [problem] = await problems_of(account, a=p5(3), b=p5(1))
    assert problem.field == "instance_groups[0].count" and problem.rule == "cluster_quota"
    assert problem.message == "ml.p5.48xlarge for cluster usage allows 2; this cluster asks for 4"
    assert "request an increase of 'ml.p5.48xlarge for cluster usage' to at least 4" in problem.hint
    assert "training plan" in problem.hint


async def test_quota_subtracts_what_existing_clusters_use() -> None:
    account = FakeAccount()
    account.quotas["ml.p5.48xlarge"] = 4
    account.usage["ml.p5.48xlarge"] = 3
    [problem] = await problems_of(account, a=p5(2))
    assert problem.message == (
        "ml.p5.48xlarge for cluster usage allows 4; this cluster asks for 2 "
        "and clusters of this account already use 3"
    )
    assert "lower the count to 1" in problem.hint
    account.usage["ml.p5.48xlarge"] = 2
    assert await problems_of(account, a=p5(2)) == []


async def test_training_plan_capacity_is_not_counted_against_the_quota() -> None:
    account = FakeAccount()
    account.quotas["ml.p5.48xlarge"] = 0
    account.plans[PLAN] = plan()
    assert await problems_of(account, reserved=on_plan(4)) == []
    assert account.asked == []  # nothing on-demand: neither quotas nor usage are read


async def test_a_missing_plan_says_how_to_find_one() -> None:
    [problem] = await problems_of(FakeAccount(), reserved=on_plan(1))
    assert problem.field == "instance_groups[0].training_plan_arn"
    assert problem.message == "training plan p5-reserved does not exist in this account and region"
    assert "GET /api/v1/inspect/training-plans" in problem.hint


async def test_an_inactive_plan_is_named_with_its_status() -> None:
    account = FakeAccount()
    account.plans[PLAN] = plan(status="Expired")
    [problem] = await problems_of(account, reserved=on_plan(1))
    assert (problem.rule, problem.message) == (
        "training_plan_active",
        "training plan p5-reserved is Expired, not Active",
    )


async def test_a_plan_reserving_another_zone_names_that_zone() -> None:
    account = FakeAccount()
    account.plans[PLAN] = plan(use1_az5=4)
    [problem] = await problems_of(account, reserved=on_plan(2))
    assert problem.message == (
        "training plan p5-reserved reserves no ml.p5.48xlarge in use1-az2; it reserves 4 in use1-az5"
    )
    assert problem.hint == "set the group's availability_zone_id to use1-az5"


async def test_plan_capacity_is_shared_by_groups_on_the_same_plan_and_zone() -> None:
    account = FakeAccount()
    account.plans[PLAN] = plan(available=3, use1_az2=4)
    [problem] = await problems_of(account, a=on_plan(2), b=on_plan(2))
    assert problem.message == (
        "training plan p5-reserved has 3 ml.p5.48xlarge available in use1-az2; "
        "this cluster asks for 4"
    )
    assert problem.hint.startswith("lower the count to 3")


async def test_a_taken_name_and_a_missing_vpc_are_reported_together() -> None:
    account = FakeAccount()
    account.names["llm-training"] = ["EKS", "HyperPod"]
    with_vpc = spec().model_copy(
        update={"network": spec().network.model_copy(update={"vpc_id": "vpc-0123456789abcdef0"})}
    )
    problems = await check_create(account, with_vpc, "us-east-1")
    assert [(p.field, p.message) for p in problems] == [
        ("name", "the name llm-training is taken by an existing EKS and HyperPod cluster"),
        ("network.vpc_id", "VPC vpc-0123456789abcdef0 does not exist in this account and region"),
    ]
    account.names.clear()
    account.vpcs.add("vpc-0123456789abcdef0")
    assert await check_create(account, with_vpc, "us-east-1") == []


async def test_another_region_is_refused_before_any_read() -> None:
    [problem] = await check_create(FakeAccount(), spec(), "eu-west-1")
    assert (problem.field, problem.rule) == ("region", "region_served")
    assert problem.message == (
        "region eu-west-1 is not served by this control plane (it serves us-east-1)"
    )
    assert problem.hint == "use one of us-east-1, or add eu-west-1 to HYPERPILOT_AWS_REGIONS"


def test_several_problems_become_one_stage_error() -> None:
    problems = [
        Problem("name", "name_available", "taken", "choose another name"),
        Problem("instance_groups[0].count", "cluster_quota", "too many", "request an increase"),
        Problem("instance_groups[1].count", "cluster_quota", "too many", "request an increase"),
    ]
    message, hint = problems_summary(problems)
    assert (
        message
        == "name: taken; instance_groups[0].count: too many; instance_groups[1].count: too many"
    )
    assert hint == "choose another name; request an increase"
