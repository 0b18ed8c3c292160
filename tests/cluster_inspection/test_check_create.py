"""check_create against the simulated account: the decision-grade answers for a wrong zone, an
exceeded quota and a bad training plan, and nothing at all for a spec that can be created."""

from __future__ import annotations

from typing import Any

from cluster_svc.adapters.inspect import Inspector
from shared.contracts.cluster import ClusterSpec
from tests.cluster_inspection.conftest import REGION, World, spec


def p5(count: int, **extra: Any) -> dict[str, Any]:
    return {"instance_type": "ml.p5.48xlarge", "count": count, **extra}


def messages(problems: list[Any]) -> list[tuple[str, str, str]]:
    return [(p.field, p.rule, p.message) for p in problems]


async def test_a_spec_that_can_be_created_has_no_problems(
    world: World, inspector: Inspector
) -> None:
    good = spec(
        "fresh-cluster",
        workers=p5(2),
        reserved=p5(4, capacity_type="training-plan", training_plan_arn=world.active_plan_arn),
    )
    assert await inspector.check_create(good, REGION) == []
    in_vpc = ClusterSpec.model_validate(
        {**good.model_dump(mode="json"), "network": {"vpc_id": world.vpc_id}}
    )
    assert await inspector.check_create(in_vpc, REGION) == []


async def test_wrong_zone_names_the_zones_that_offer_the_type(
    world: World, inspector: Inspector
) -> None:
    problems = await inspector.check_create(
        spec(
            "fresh-cluster", zone="use1-az3", gpu={"instance_type": "ml.p4d.24xlarge", "count": 1}
        ),
        REGION,
    )
    assert messages(problems) == [
        (
            "instance_groups[0].instance_type",
            "instance_type_offered",
            "ml.p4d.24xlarge is not offered in use1-az3; "
            "it is offered in use1-az1, use1-az2, use1-az4 and use1-az6",
        )
    ]


async def test_over_quota_counts_existing_clusters(world: World, inspector: Inspector) -> None:
    p5_over = await inspector.check_create(spec("fresh-cluster", a=p5(3), b=p5(1)), REGION)
    assert messages(p5_over) == [
        (
            "instance_groups[0].count",
            "cluster_quota",
            "ml.p5.48xlarge for cluster usage allows 2; this cluster asks for 4",
        )
    ]
    assert "request an increase" in p5_over[0].hint and "training plan" in p5_over[0].hint
    # 2 of the 3 ml.g5.8xlarge the account may run are held by an existing cluster.
    g5 = {"instance_type": "ml.g5.8xlarge", "count": 2}
    assert messages(await inspector.check_create(spec("fresh-cluster", g=g5), REGION)) == [
        (
            "instance_groups[0].count",
            "cluster_quota",
            "ml.g5.8xlarge for cluster usage allows 3; this cluster asks for 2 "
            "and clusters of this account already use 2",
        )
    ]


async def test_bad_training_plans(world: World, inspector: Inspector) -> None:
    missing = world.active_plan_arn.replace("p5-reserved", "never-bought")
    bad = spec(
        "fresh-cluster",
        too_many=p5(6, capacity_type="training-plan", training_plan_arn=world.active_plan_arn),
        elsewhere=p5(
            1,
            capacity_type="training-plan",
            training_plan_arn=world.active_plan_arn,
            availability_zone_id="use1-az5",
        ),
        expired=p5(1, capacity_type="training-plan", training_plan_arn=world.expired_plan_arn),
        missing=p5(1, capacity_type="training-plan", training_plan_arn=missing),
    )
    assert messages(await inspector.check_create(bad, REGION)) == [
        (
            "instance_groups[2].training_plan_arn",
            "training_plan_active",
            "training plan p5-last-month is Expired, not Active",
        ),
        (
            "instance_groups[3].training_plan_arn",
            "training_plan_exists",
            "training plan never-bought does not exist in this account and region",
        ),
        (
            "instance_groups[0].training_plan_arn",
            "training_plan_capacity",
            "training plan p5-reserved has 4 ml.p5.48xlarge available in use1-az2; "
            "this cluster asks for 6",
        ),
        (
            "instance_groups[1].training_plan_arn",
            "training_plan_capacity",
            "training plan p5-reserved reserves no ml.p5.48xlarge in use1-az5; "
            "it reserves 4 in use1-az2",
        ),
    ]


async def test_taken_names_and_unknown_vpc(world: World, inspector: Inspector) -> None:
    taken = ClusterSpec.model_validate(
        {
            **spec(world.imported_hyperpod).model_dump(mode="json"),
            "network": {"vpc_id": "vpc-0123456789abcdef0"},
        }
    )
    assert messages(await inspector.check_create(taken, REGION)) == [
        (
            "name",
            "name_available",
            f"the name {world.imported_hyperpod} is taken by an existing HyperPod cluster",
        ),
        (
            "network.vpc_id",
            "vpc_exists",
            "VPC vpc-0123456789abcdef0 does not exist in this account and region",
        ),
    ]
