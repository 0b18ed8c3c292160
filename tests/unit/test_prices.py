"""List prices (cluster_svc.domain.prices): the table read from Price List documents, and what
a plan adds per hour, the sum of its priced resources."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cluster_svc.domain.prices import PriceTable, plan_cost, price_table, with_cost
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from sim.aws.pricing import catalog

READ_AT = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def table() -> PriceTable:
    documents = [p.price_list_item() for p in catalog("us-east-1")]
    return price_table(
        documents, region="us-east-1", endpoint_region="us-east-1", fetched_at=READ_AT
    )


def test_the_table_says_its_source_and_date(table: PriceTable) -> None:
    assert table.instance("ml.p5.48xlarge") == 113.068
    assert table.instance("g5.8xlarge") == table.instance("ml.g5.8xlarge") == 3.06
    assert table.instance("ml.x99.huge") is None
    assert table.nat_gateway_hour == 0.045
    assert table.lustre_gb_month[("PERSISTENT_2", 250)] == 0.21
    assert table.source.as_of.isoformat() == "2026-11-20"  # the list's publication date
    assert table.source.fetched_at == READ_AT
    assert "AWS Price List API" in table.source.source
    assert "pricing:GetProducts" in table.source.source
    assert table.source.region == "us-east-1" and table.source.currency == "USD"


def test_other_regions_and_terms_are_not_taken() -> None:
    documents = [p.price_list_item() for p in catalog("us-west-2")]
    east = price_table(
        documents, region="us-east-1", endpoint_region="us-east-1", fetched_at=READ_AT
    )
    assert east.instance_hour == {} and east.nat_gateway_hour is None


def _create_plan() -> Plan:
    return Plan(
        command="CreateCluster",
        target="llm",
        noop=False,
        calls=[
            PlannedCall(service="ec2", operation="CreateNatGateway", params={"stage": "network"}),
            PlannedCall(
                service="sagemaker",
                operation="CreateCluster",
                params={
                    "InstanceGroups": [
                        {
                            "InstanceGroupName": "gpu",
                            "InstanceType": "ml.p5.48xlarge",
                            "InstanceCount": 2,
                        },
                        {
                            "InstanceGroupName": "cpu",
                            "InstanceType": "ml.m5.xlarge",
                            "InstanceCount": 3,
                        },
                        {
                            "InstanceGroupName": "odd",
                            "InstanceType": "ml.x99.huge",
                            "InstanceCount": 1,
                        },
                    ]
                },
            ),
            PlannedCall(
                service="fsx",
                operation="CreateFileSystem",
                params={
                    "StorageCapacity": 2400,
                    "LustreConfiguration": {
                        "DeploymentType": "PERSISTENT_2",
                        "PerUnitStorageThroughput": 250,
                    },
                },
            ),
        ],
    )


def test_a_plans_cost_is_the_sum_of_its_priced_resources(table: PriceTable) -> None:
    cost = plan_cost(_create_plan(), table)
    assert cost is not None
    by_name = {i.name: i for i in cost.items}
    assert by_name["gpu"].per_hour == round(2 * 113.068, 4)
    assert by_name["cpu"].per_hour == round(3 * 0.23, 4)
    assert by_name["nat-gateway"].per_hour == 0.045
    assert by_name["lustre"].per_hour == round(0.21 * 2400 / 730, 4)
    assert cost.adds_per_hour == round(sum(i.per_hour for i in cost.items), 4)
    assert cost.adds_per_hour == pytest.approx(226.136 + 0.69 + 0.045 + 0.21 * 2400 / 730, abs=1e-3)
    assert cost.unpriced == ["instance group odd: +1 x ml.x99.huge"]  # never counted as free
    assert cost.prices == table.source


def test_scaling_prices_the_instances_added_or_removed(table: PriceTable) -> None:
    def scale(actual: int, requested: int) -> Plan:
        return Plan(
            command="UpdateInstanceGroup",
            target="llm/instance-groups/gpu",
            noop=False,
            diff={"count": FieldChange(actual=actual, requested=requested)},
            calls=[
                PlannedCall(
                    service="sagemaker",
                    operation="UpdateCluster",
                    params={
                        "InstanceGroups": [
                            {
                                "InstanceGroupName": "gpu",
                                "InstanceType": "ml.g5.8xlarge",
                                "InstanceCount": requested,
                            }
                        ]
                    },
                )
            ],
        )

    up = with_cost(scale(1, 3), table)
    assert up.cost is not None and up.cost.adds_per_hour == 6.12
    assert up.notes[-1] == "adds $6.12/h at list prices (2026-11-20)"
    down = with_cost(scale(3, 0), table)
    assert down.cost is not None and down.cost.adds_per_hour == -9.18
    assert down.notes[-1] == "saves $9.18/h at list prices (2026-11-20)"
    same = Plan(command="UpdateInstanceGroup", target="x", noop=True)
    assert with_cost(same, table) == same  # nothing priced: no cost line


def test_deleting_a_group_saves_its_instances_unless_they_are_prepaid(table: PriceTable) -> None:
    def delete(**extra: FieldChange) -> Plan:
        return Plan(
            command="DeleteInstanceGroup",
            target="llm/instance-groups/gpu",
            noop=False,
            diff={
                "instance_group": FieldChange(actual="gpu", requested=None),
                "count": FieldChange(actual=3, requested=0),
                "instance_type": FieldChange(actual="ml.g5.8xlarge", requested=None),
                **extra,
            },
            calls=[
                PlannedCall(
                    service="sagemaker",
                    operation="UpdateCluster",
                    params={"ClusterName": "llm", "InstanceGroupsToDelete": ["gpu"]},
                )
            ],
        )

    gone = with_cost(delete(), table)
    assert gone.cost is not None and gone.cost.adds_per_hour == -9.18
    (item,) = gone.cost.items
    assert item.description == "instance group gpu: -3 x ml.g5.8xlarge" and item.quantity == -3
    assert gone.notes[-1] == "saves $9.18/h at list prices (2026-11-20)"
    arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/tp"
    prepaid = with_cost(delete(training_plan_arn=FieldChange(actual=arn, requested=None)), table)
    assert prepaid.cost is not None and prepaid.cost.adds_per_hour == 0.0
    assert "on training plan tp (prepaid)" in prepaid.cost.items[0].description
