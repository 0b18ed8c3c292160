"""The simulated AWS throttles beyond AWS's published request rates (sim.aws.throttle): raw
botocore clients (no client-side validation, no retries) against a simulator of its own, whose
buckets run on a clock the test holds still or moves on."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.aws.throttle import ENV_SCALE, LIMITS, Throttle, limit_for, scale_from_env
from sim.profile import get_profile

ACCOUNT = "222233334444"
# total_max_attempts 1: no retry at all (botocore's "max_attempts" counts retries, not attempts)
RAW = Config(retries={"total_max_attempts": 1}, parameter_validation=False)


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatedAws]:
    with SimulatedAws(
        get_profile("fast"), account_id=ACCOUNT, regions=("us-west-2",), throttle_scale=1.0
    ) as running:
        yield running


@pytest.fixture
def clock(sim: SimulatedAws) -> Iterator[Clock]:
    held = Clock()
    for region in (sim, sim.in_region("us-west-2")):
        region.throttle.reset()
        region.throttle.clock = held
    yield held
    for region in (sim, sim.in_region("us-west-2")):
        region.throttle.clock = time.monotonic
        region.throttle.reset()


def raw(sim: SimulatedAws, service: str, region: str = "us-east-1") -> Any:
    return botocore.session.get_session().create_client(
        service,
        region_name=region,
        endpoint_url=sim.endpoint_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=RAW,
    )


def outcomes(call: Callable[[int], Any], times: int) -> list[tuple[str, int]]:
    """(error code or "ok", HTTP status) of each of `times` calls."""
    found = []
    for i in range(times):
        try:
            answer = call(i)
            found.append(("ok", answer["ResponseMetadata"]["HTTPStatusCode"]))
        except ClientError as err:
            found.append(
                (err.response["Error"]["Code"], err.response["ResponseMetadata"]["HTTPStatusCode"])
            )
    return found


def test_a_burst_beyond_the_bucket_is_throttled_and_changes_nothing(
    sim: SimulatedAws, clock: Clock
) -> None:
    ec2 = raw(sim, "ec2")
    vpc = ec2.create_vpc(CidrBlock="10.61.0.0/16")["Vpc"]["VpcId"]  # takes CreateVpc's token
    before = len(sim.call_log("ec2", "CreateTags"))
    # EC2's mutating actions: a bucket of 50 per action, refilled at 5 a second
    got = outcomes(
        lambda i: ec2.create_tags(Resources=[vpc], Tags=[{"Key": f"k{i}", "Value": "v"}]), 60
    )
    assert got == [("ok", 200)] * 50 + [("RequestLimitExceeded", 503)] * 10
    logged = sim.call_log("ec2", "CreateTags")[before:]
    assert [(c["applied"], c["error"]) for c in logged] == [(True, None)] * 50 + [
        (False, "RequestLimitExceeded")
    ] * 10
    tags = ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [vpc]}])["Tags"]
    assert sorted(t["Key"] for t in tags) == sorted(f"k{i}" for i in range(50))


def test_buckets_refill_at_their_rate_and_hold_no_more_than_their_burst(
    sim: SimulatedAws, clock: Clock
) -> None:
    quotas = raw(sim, "service-quotas")

    def call(_: int) -> Any:
        return quotas.list_service_quotas(ServiceCode="sagemaker", MaxResults=1)

    # ListServiceQuotas: 10 a second and 10 more in one burst
    assert outcomes(call, 21) == [("ok", 200)] * 20 + [("TooManyRequestsException", 429)]
    clock.now += 0.5  # half a second: 5 tokens
    assert outcomes(call, 6) == [("ok", 200)] * 5 + [("TooManyRequestsException", 429)]
    clock.now += 3600  # an idle hour refills to the burst, not beyond
    assert outcomes(call, 21) == [("ok", 200)] * 20 + [("TooManyRequestsException", 429)]


def test_within_the_published_rate_nothing_is_throttled(sim: SimulatedAws, clock: Clock) -> None:
    pricing = raw(sim, "pricing")

    def call(_: int) -> Any:
        return pricing.describe_services(ServiceCode="AmazonEC2")

    # the Price List API: a bucket of 10, 5 back a second; 5 calls a second for a minute
    got = []
    before = sim.throttle.throttled
    for _second in range(60):
        got += outcomes(call, 5)
        clock.now += 1.0
    assert got == [("ok", 200)] * 300
    assert sim.throttle.throttled == before


@pytest.mark.parametrize(
    ("service", "call", "burst", "code", "status"),
    [
        ("eks", lambda c: c.list_clusters(), 100, "ThrottlingException", 429),
        ("sagemaker", lambda c: c.list_clusters(), 100, "ThrottlingException", 400),
        ("sts", lambda c: c.get_caller_identity(), 100, "Throttling", 400),
        ("events", lambda c: c.list_rules(), 50, "ThrottlingException", 400),
        ("pricing", lambda c: c.describe_services(), 10, "ThrottlingException", 400),
        (
            "service-quotas",
            lambda c: c.get_service_quota(ServiceCode="ec2", QuotaCode="L-1216C47A"),
            10,
            "TooManyRequestsException",
            429,
        ),
    ],
)
def test_each_service_throttles_in_its_own_shape(
    sim: SimulatedAws,
    clock: Clock,
    service: str,
    call: Callable[[Any], Any],
    burst: int,
    code: str,
    status: int,
) -> None:
    client = raw(sim, service)

    def once(_: int) -> Any:
        try:
            return call(client)
        except ClientError as err:
            if err.response["Error"]["Code"] == code:
                raise
            # an answer that is not a throttle (a quota the account lacks) still spent a token
            return {"ResponseMetadata": {"HTTPStatusCode": 200}}

    got = outcomes(once, burst + 1)
    assert got[:burst] == [("ok", 200)] * burst
    assert got[burst] == (code, status)


def test_buckets_are_per_operation_per_region_and_shared_where_aws_shares_them(
    sim: SimulatedAws, clock: Clock
) -> None:
    sqs = raw(sim, "sqs")
    url = sqs.create_queue(QueueName="throttle-tags")["QueueUrl"]
    # SQS tagging: 30 a second for the account, TagQueue and ListQueueTags together
    tagged = outcomes(lambda i: sqs.tag_queue(QueueUrl=url, Tags={f"t{i}": "v"}), 20)
    listed = outcomes(lambda _: sqs.list_queue_tags(QueueUrl=url), 11)
    assert tagged == [("ok", 200)] * 20
    assert listed == [("ok", 200)] * 10 + [("RequestThrottled", 400)]
    # ...while receiving is not throttled (standard queues: nearly unlimited per action)
    assert outcomes(lambda _: sqs.receive_message(QueueUrl=url), 200) == [("ok", 200)] * 200
    # EC2: each action its own bucket; each Region its own buckets
    east, west = raw(sim, "ec2"), raw(sim, "ec2", "us-west-2")
    assert outcomes(lambda _: east.describe_vpcs(), 101)[-1] == ("RequestLimitExceeded", 503)
    assert outcomes(lambda _: east.describe_subnets(), 1) == [("ok", 200)]
    assert outcomes(lambda _: west.describe_vpcs(), 100) == [("ok", 200)] * 100
    # EventBridge: every API but PutEvents shares one bucket of 50 a second
    events = raw(sim, "events")
    assert outcomes(lambda _: events.list_rules(), 50) == [("ok", 200)] * 50
    assert outcomes(lambda _: events.list_event_buses(), 1) == [("ThrottlingException", 400)]


def test_scale_multiplies_the_limits_and_zero_turns_throttling_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    still = Clock()
    doubled = Throttle(2.0, clock=still)
    assert [
        doubled.take(ACCOUNT, "us-east-1", "pricing", "GetProducts", False) for _ in range(21)
    ] == [True] * 20 + [False]
    off = Throttle(0.0, clock=still)
    assert all(off.take(ACCOUNT, "us-east-1", "pricing", "GetProducts", False) for _ in range(1000))
    monkeypatch.setenv(ENV_SCALE, "0.5")
    assert scale_from_env() == 0.5
    monkeypatch.setenv(ENV_SCALE, "fast")
    with pytest.raises(ValueError, match=ENV_SCALE):
        scale_from_env()
    monkeypatch.delenv(ENV_SCALE)
    assert scale_from_env() == 1.0


def test_every_limit_names_its_source() -> None:
    for (service, operation), limit in LIMITS.items():
        assert limit.rate > 0 and limit.burst >= limit.rate, (service, operation)
        assert "https://" in limit.source, (service, operation)
    assert limit_for("sqs", "ReceiveMessage", False) is None
    assert limit_for("ec2", "CreateTags", True) == LIMITS[("ec2", "*mutation")]
