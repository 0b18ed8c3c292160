"""The simulated Price List API and training-plan purchase through raw botocore
(parameter_validation=False, so the simulator's own checks answer): shapes outside botocore's
model are refused by the generic validation, AWS's rules by the simulation; GetProducts answers
PriceList JSON strings shaped like AWS's; an offering is bought once, its plan is Scheduled,
then Active, and backs a HyperPod instance group only when it was bought for hyperpod-cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.profile import get_profile
from sim.testing import aws_client, wait_for

RAW = Config(parameter_validation=False, retries={"mode": "standard", "total_max_attempts": 1})


@pytest.fixture(autouse=True)
def full_buckets(sim: SimulatedAws) -> Iterator[None]:
    """Each test starts with the Price List API's buckets full: the module calls GetProducts
    dozens of times without retries, beyond its published 10 at once and 5 a second
    (sim.aws.throttle; tests/sim_aws/test_throttle.py is where throttling is shown)."""
    sim.throttle.reset()
    yield


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatedAws]:
    aws = SimulatedAws(get_profile("fast"), account_id="555566667777").start()
    yield aws
    aws.stop()


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def test_get_products_answers_price_list_documents(sim: SimulatedAws) -> None:
    pricing = aws_client(sim, "pricing", config=RAW)
    answer = pricing.get_products(
        ServiceCode="AmazonSageMaker",
        Filters=[
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"},
            {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "ml.p5.48xlarge"},
        ],
        FormatVersion="aws_v1",
    )
    assert answer["FormatVersion"] == "aws_v1"
    assert len(answer["PriceList"]) == 1
    item = answer["PriceList"][0]
    assert isinstance(item, str)  # a JSON document as a string, as AWS sends it
    doc = json.loads(item)
    assert doc["serviceCode"] == "AmazonSageMaker"
    assert doc["product"]["attributes"]["instanceType"] == "ml.p5.48xlarge"
    (term,) = doc["terms"]["OnDemand"].values()
    (dimension,) = term["priceDimensions"].values()
    assert dimension["unit"] == "Hrs"
    assert float(dimension["pricePerUnit"]["USD"]) == pytest.approx(113.068)
    assert doc["publicationDate"].endswith("Z")


def test_filters_paging_services_and_attribute_values(sim: SimulatedAws) -> None:
    """Every endpoint of the Price List API answers for all regions; `regionCode` picks one."""
    pricing = aws_client(sim, "pricing", config=RAW)
    nat = [
        {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "NAT Gateway"},
        {"Type": "CONTAINS", "Field": "usagetype", "Value": "NatGateway-Hours"},
    ]
    everywhere = pricing.get_products(ServiceCode="AmazonEC2", Filters=nat)["PriceList"]
    here = pricing.get_products(
        ServiceCode="AmazonEC2",
        Filters=[*nat, {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-west-2"}],
    )["PriceList"]
    assert len(here) == 1 and '"regionCode":"us-west-2"' in here[0]
    assert len(everywhere) > 1 and here[0] in everywhere
    one_region = {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"}
    persistent = {"Type": "ANY_OF", "Field": "deploymentOption", "Value": "Persistent_2"}
    lustre = pricing.get_products(
        ServiceCode="AmazonFSx", Filters=[one_region, persistent], MaxResults=2
    )
    assert len(lustre["PriceList"]) == 2 and lustre["NextToken"]
    rest = pricing.get_products(
        ServiceCode="AmazonFSx", Filters=[one_region, persistent], NextToken=lustre["NextToken"]
    )
    assert len(rest["PriceList"]) == 2 and "NextToken" not in rest
    services = pricing.describe_services(ServiceCode="AmazonSageMaker")["Services"]
    assert "instanceType" in services[0]["AttributeNames"]
    values = pricing.get_attribute_values(ServiceCode="AmazonSageMaker", AttributeName="regionCode")
    assert {"Value": "us-east-1"} in values["AttributeValues"]
    assert {"Value": "us-west-2"} in values["AttributeValues"]


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, "ValidationException"),  # ServiceCode is required (botocore's model)
        ({"ServiceCode": "AmazonSageMaker", "MaxResults": 500}, "ValidationException"),
        (
            {
                "ServiceCode": "AmazonSageMaker",
                "Filters": [{"Type": "LIKE", "Field": "a", "Value": "b"}],
            },
            "ValidationException",
        ),
        ({"ServiceCode": "AmazonSageMaker", "Filters": [{"Field": "a"}]}, "ValidationException"),
        ({"ServiceCode": "AmazonNothing"}, "NotFoundException"),
        (
            {"ServiceCode": "AmazonSageMaker", "FormatVersion": "aws_v2"},
            "InvalidParameterException",
        ),
        (
            {
                "ServiceCode": "AmazonSageMaker",
                "Filters": [{"Type": "TERM_MATCH", "Field": "colour", "Value": "red"}],
            },
            "InvalidParameterException",
        ),
        ({"ServiceCode": "AmazonSageMaker", "NextToken": "x"}, "InvalidNextTokenException"),
    ],
)
def test_bad_get_products_are_refused(sim: SimulatedAws, params: dict[str, Any], code: str) -> None:
    pricing = aws_client(sim, "pricing", config=RAW)
    with pytest.raises(ClientError) as exc:
        pricing.get_products(**params)
    assert _code(exc) == code


SEARCH = {
    "TargetResources": ["hyperpod-cluster"],
    "InstanceType": "ml.p5.48xlarge",
    "InstanceCount": 2,
    "DurationHours": 48,
}


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"InstanceCount": 3}, "1, 2, 4, 8, 16, 32 or 64"),
        ({"DurationHours": 30}, "1-day"),
        ({"DurationHours": 183 * 24}, "182 days"),
        ({"TargetResources": ["training-job", "hyperpod-cluster"]}, "one target resource"),
        ({"TargetResources": ["endpoint"]}, "training-job or hyperpod-cluster"),
        ({"InstanceType": None}, "InstanceType is required"),
    ],
)
def test_offering_search_rules(sim: SimulatedAws, change: dict[str, Any], says: str) -> None:
    sagemaker = aws_client(sim, "sagemaker", config=RAW)
    params = {k: v for k, v in {**SEARCH, **change}.items() if v is not None}
    with pytest.raises(ClientError) as exc:
        sagemaker.search_training_plan_offerings(**params)
    assert _code(exc) == "ValidationException"
    assert says in exc.value.response["Error"]["Message"]


def test_offering_search_shape_checked_by_the_model(sim: SimulatedAws) -> None:
    sagemaker = aws_client(sim, "sagemaker", config=RAW)
    with pytest.raises(ClientError) as exc:
        sagemaker.search_training_plan_offerings(**{**SEARCH, "InstanceType": "ml.g5.xlarge"})
    assert _code(exc) == "ValidationException"  # not a ReservedCapacityInstanceType


def test_window_too_short_or_too_late_has_no_offerings(sim: SimulatedAws) -> None:
    sagemaker = aws_client(sim, "sagemaker", config=RAW)
    now = datetime.now(UTC)
    short = sagemaker.search_training_plan_offerings(
        **SEARCH, StartTimeAfter=now, EndTimeBefore=now + timedelta(hours=24)
    )
    assert short["TrainingPlanOfferings"] == []
    late = sagemaker.search_training_plan_offerings(
        **SEARCH, StartTimeAfter=now + timedelta(days=90)
    )
    assert late["TrainingPlanOfferings"] == []


def test_buy_an_offering_once_and_use_it_for_hyperpod_only(sim: SimulatedAws) -> None:
    sim.account.set_offering("ml.p5.48xlarge", ["use1-az2", "use1-az4"])
    sagemaker = aws_client(sim, "sagemaker", config=RAW)
    offerings = sagemaker.search_training_plan_offerings(**SEARCH)["TrainingPlanOfferings"]
    # one offering per zone the type is offered in (use1-az2 is us-east-1c here, use1-az4 -d)
    assert [o["ReservedCapacityOfferings"][0]["AvailabilityZone"] for o in offerings] == [
        "us-east-1c",
        "us-east-1d",
    ]
    first = offerings[0]
    assert first["TrainingPlanOfferingId"].startswith("tpo-")
    again_found = sagemaker.search_training_plan_offerings(**SEARCH)["TrainingPlanOfferings"]
    assert [o["TrainingPlanOfferingId"] for o in again_found] == [
        o["TrainingPlanOfferingId"] for o in offerings
    ]  # the same search finds the same offerings until one is bought
    assert first["UpfrontFee"] == "10854.53"  # 113.068 x 2 instances x 48 h
    arn = sagemaker.create_training_plan(
        TrainingPlanName="p5-two-days", TrainingPlanOfferingId=first["TrainingPlanOfferingId"]
    )["TrainingPlanArn"]
    plan = sagemaker.describe_training_plan(TrainingPlanName="p5-two-days")
    assert plan["TrainingPlanArn"] == arn
    assert plan["Status"] in ("Scheduled", "Active")
    assert plan["UpfrontFee"] == "10854.53"
    assert plan["TargetResources"] == ["hyperpod-cluster"]
    assert plan["TotalInstanceCount"] == 2
    wait_for(
        lambda: (
            sagemaker.describe_training_plan(TrainingPlanName="p5-two-days")["Status"] == "Active"
        ),
        timeout=10,
    )
    with pytest.raises(ClientError) as again:
        sagemaker.create_training_plan(
            TrainingPlanName="p5-again", TrainingPlanOfferingId=first["TrainingPlanOfferingId"]
        )
    assert _code(again) == "ResourceNotFound"
    after = sagemaker.search_training_plan_offerings(**SEARCH)["TrainingPlanOfferings"]
    assert first["TrainingPlanOfferingId"] not in {o["TrainingPlanOfferingId"] for o in after}
    with pytest.raises(ClientError) as taken:
        sagemaker.create_training_plan(
            TrainingPlanName="p5-two-days",
            TrainingPlanOfferingId=offerings[1]["TrainingPlanOfferingId"],
        )
    assert _code(taken) == "ResourceInUse"
    with pytest.raises(ClientError) as bad_name:
        sagemaker.create_training_plan(
            TrainingPlanName="no_underscores", TrainingPlanOfferingId="tpo-x"
        )
    assert _code(bad_name) == "ValidationException"  # botocore's pattern


def test_a_training_job_plan_cannot_back_an_instance_group(sim: SimulatedAws) -> None:
    sagemaker = aws_client(sim, "sagemaker", config=RAW)
    offering = sagemaker.search_training_plan_offerings(
        **{**SEARCH, "TargetResources": ["training-job"], "InstanceCount": 1}
    )["TrainingPlanOfferings"][0]
    arn = sagemaker.create_training_plan(
        TrainingPlanName="jobs-only", TrainingPlanOfferingId=offering["TrainingPlanOfferingId"]
    )["TrainingPlanArn"]
    wait_for(
        lambda: (
            sagemaker.describe_training_plan(TrainingPlanName="jobs-only")["Status"] == "Active"
        ),
        timeout=10,
    )
    with pytest.raises(ClientError) as exc:
        sagemaker.create_cluster(
            ClusterName="uses-job-plan",
            InstanceGroups=[
                {
                    "InstanceGroupName": "gpu",
                    "InstanceType": "ml.p5.48xlarge",
                    "InstanceCount": 1,
                    "LifeCycleConfig": {"SourceS3Uri": "s3://b/l", "OnCreate": "on_create.sh"},
                    "ExecutionRole": "arn:aws:iam::555566667777:role/none",
                    "TrainingPlanArn": arn,
                }
            ],
        )
    assert _code(exc) == "ValidationException"
