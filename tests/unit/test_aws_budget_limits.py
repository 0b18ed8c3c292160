"""The control plane's copy of AWS's published request rates (shared.aws_budget) is the simulated
AWS's (sim.aws.throttle), and what the control plane sends of any operation stays at or under it:
the account bucket where it is the tighter, the operation's own bucket where AWS's is."""

from __future__ import annotations

import botocore.session
import pytest

from shared import aws_budget
from shared.aws_budget import (
    DEFAULT_BURST,
    DEFAULT_RATE,
    HEADROOM,
    PUBLISHED_LIMITS,
    binding,
    operation_bucket,
    published_limit,
)
from sim.aws import wire
from sim.aws.throttle import LIMITS, limit_for
from sim.aws.wire import is_mutating

SERVICES = sorted({service for service, _ in LIMITS})


def _operations(service: str) -> list[str]:
    return list(botocore.session.get_session().get_service_model(service).operation_names)


def test_the_two_tables_hold_the_same_limits_from_the_same_pages() -> None:
    assert set(PUBLISHED_LIMITS) == set(LIMITS)
    for key, limit in LIMITS.items():
        mirror = PUBLISHED_LIMITS[key]
        assert (mirror.rate, mirror.burst, mirror.source, mirror.shared) == (
            limit.rate,
            limit.burst,
            limit.source,
            limit.shared,
        ), key
    assert aws_budget._READ_PREFIXES == wire._READ_PREFIXES


@pytest.mark.parametrize("service", SERVICES)
def test_every_operation_finds_the_same_bucket_on_both_sides(service: str) -> None:
    for operation in _operations(service):
        sim = limit_for(service, operation, is_mutating(operation))
        mine = published_limit(service, operation)
        assert (sim is None) == (mine is None), (service, operation)
        if sim is not None and mine is not None:
            assert (mine.rate, mine.burst, mine.shared) == (sim.rate, sim.burst, sim.shared)


@pytest.mark.parametrize("service", SERVICES)
def test_the_control_plane_stays_at_or_under_every_published_limit(service: str) -> None:
    for operation in _operations(service):
        sim = limit_for(service, operation, is_mutating(operation))
        if sim is None:
            continue
        own = binding(published_limit(service, operation), DEFAULT_RATE, DEFAULT_BURST)
        burst, rate = (
            operation_bucket(own, DEFAULT_RATE, DEFAULT_BURST)
            if own
            else (DEFAULT_BURST, DEFAULT_RATE)
        )
        # at or under the rate, and a token of headroom under the burst
        assert rate <= sim.rate and burst <= sim.burst - HEADROOM, (service, operation)


def test_only_operations_tighter_than_the_account_bucket_spend_twice() -> None:
    assert binding(published_limit("sagemaker", "ListClusterNodes"), 10.0, 20.0) is None
    assert binding(published_limit("sqs", "ReceiveMessage"), 10.0, 20.0) is None
    assert binding(published_limit("ec2", "CreateTags"), 10.0, 20.0) is not None
    assert binding(published_limit("pricing", "GetProducts"), 10.0, 20.0) is not None
    # a faster account bucket (AWS_CALLS_PER_SECOND=30) makes the reads bind too
    assert binding(published_limit("sagemaker", "ListClusterNodes"), 30.0, 20.0) is not None
