"""Request-rate limits: the simulated AWS throttles a caller beyond what AWS publishes.

AWS throttles API requests per account and Region with token buckets: a bucket holds `burst`
tokens, each request takes one, and `rate` tokens a second flow back in up to `burst` (EC2
describes the scheme: https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html).
A request that finds its bucket empty is answered with the service's throttling error
(sim.aws.errors.throttling_code) before any handler runs, so it changes nothing.

`LIMITS` is the one table of the limits, each with the page it comes from. A service publishes
per-operation buckets (EC2, Service Quotas, the Price List API), one bucket that several
operations share (EventBridge's other APIs, SQS's tagging), or nothing: SageMaker and EKS
publish no rate for their control-plane APIs, so the simulation gives them EC2's per-action
buckets (reads 100/20, mutations 50/5), the nearest published scheme of an AWS control plane;
STS publishes no number either (IAM and STS "independently implement a token bucket algorithm",
the AWS Security Blog, "How to monitor and query IAM resources at scale - Part 2") and gets the
same analogy. An operation the table does not name is not throttled.

The shared/aws_budget.py table mirrors these numbers for the control plane (which must not
import sim/); tests/unit/test_aws_budget_limits.py keeps the two in step.

`SIM_AWS_THROTTLE_SCALE` (or `SimulatedAws(throttle_scale=...)`) multiplies every rate and burst
(2 = twice AWS's limits); 0 turns throttling off. The default, 1, is AWS's published limits.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sim.aws.errors import AwsError, throttling_code

EC2_PAGE = "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"
EVENTBRIDGE_PAGE = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"
SQS_PAGE = (
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html"
)
SQS_MESSAGES_PAGE = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html"
SERVICE_QUOTAS_PAGE = (
    "https://docs.aws.amazon.com/servicequotas/latest/userguide/reference_limits.html"
)
PRICING_PAGE = "https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-pelong.html"
STS_PAGE = (
    "https://aws.amazon.com/blogs/security/how-to-monitor-and-query-iam-resources-at-scale-part-2/"
)
ENV_SCALE = "SIM_AWS_THROTTLE_SCALE"


@dataclass(frozen=True)
class Limit:
    """One token bucket: `burst` tokens at most, `rate` back a second. `shared` names the bucket
    when several operations spend from one (None: each operation has its own)."""

    rate: float
    burst: float
    source: str
    shared: str | None = None


# EC2's per-action request buckets ("Request token limits"): non-mutating actions (Describe*,
# Get*, List*, ...) 100 tokens refilled at 20 a second, mutating actions 50 at 5.
EC2_READ = Limit(20.0, 100.0, EC2_PAGE)
EC2_MUTATION = Limit(5.0, 50.0, EC2_PAGE)
# SageMaker ("Amazon SageMaker AI endpoints and quotas": API request rates are per account and
# adjustable, no number given), EKS (no rate published; the EKS user guide's troubleshooting,
# "When launching many nodes, there are Too Many Requests errors", says DescribeCluster is
# throttled, and its model answers ThrottlingException at 429) and STS: EC2's per-action
# buckets, by analogy.
UNPUBLISHED_READ = Limit(20.0, 100.0, f"not published; EC2's non-mutating bucket ({EC2_PAGE})")
UNPUBLISHED_MUTATION = Limit(5.0, 50.0, f"not published; EC2's mutating bucket ({EC2_PAGE})")

# (service, operation) -> its bucket. "*read" and "*mutation" stand for every other operation
# of the service that reads or that changes something (sim.aws.wire.is_mutating).
LIMITS: dict[tuple[str, str], Limit] = {
    ("ec2", "*read"): EC2_READ,
    ("ec2", "*mutation"): EC2_MUTATION,
    ("sagemaker", "*read"): UNPUBLISHED_READ,
    ("sagemaker", "*mutation"): UNPUBLISHED_MUTATION,
    ("eks", "*read"): UNPUBLISHED_READ,
    ("eks", "*mutation"): UNPUBLISHED_MUTATION,
    ("sts", "*read"): Limit(20.0, 100.0, f"not published ({STS_PAGE}); EC2's non-mutating bucket"),
    ("sts", "*mutation"): Limit(5.0, 50.0, f"not published ({STS_PAGE}); EC2's mutating bucket"),
    # EventBridge: "PutEvents throttle limit in transactions per second" is per Region (10,000
    # in us-east-1, 2,400 in us-east-2, lower elsewhere): the simulation uses us-east-2's in every
    # Region; "All EventBridge APIs other than PutEvents are limited to 50 requests per second",
    # one bucket for them all.
    ("events", "PutEvents"): Limit(2400.0, 2400.0, EVENTBRIDGE_PAGE),
    ("events", "*read"): Limit(50.0, 50.0, EVENTBRIDGE_PAGE, shared="other-apis"),
    ("events", "*mutation"): Limit(50.0, 50.0, EVENTBRIDGE_PAGE, shared="other-apis"),
    # SQS standard queues: "nearly unlimited API calls per second, per API action (SendMessage,
    # ReceiveMessage, or DeleteMessage)" (SQS_MESSAGES_PAGE): not throttled. Tagging: "Tagging
    # actions are limited to 30 TPS per AWS account", one bucket.
    ("sqs", "TagQueue"): Limit(30.0, 30.0, SQS_PAGE, shared="tagging"),
    ("sqs", "UntagQueue"): Limit(30.0, 30.0, SQS_PAGE, shared="tagging"),
    ("sqs", "ListQueueTags"): Limit(30.0, 30.0, SQS_PAGE, shared="tagging"),
    # Service Quotas, "API request rates": N requests a second and N more "sent in one burst".
    ("service-quotas", "GetAWSDefaultServiceQuota"): Limit(5.0, 10.0, SERVICE_QUOTAS_PAGE),
    ("service-quotas", "GetRequestedServiceQuotaChange"): Limit(5.0, 10.0, SERVICE_QUOTAS_PAGE),
    ("service-quotas", "GetServiceQuota"): Limit(5.0, 10.0, SERVICE_QUOTAS_PAGE),
    ("service-quotas", "ListAWSDefaultServiceQuotas"): Limit(10.0, 20.0, SERVICE_QUOTAS_PAGE),
    ("service-quotas", "ListRequestedServiceQuotaChangeHistory"): Limit(
        5.0, 10.0, SERVICE_QUOTAS_PAGE
    ),
    ("service-quotas", "ListRequestedServiceQuotaChangeHistoryByQuota"): Limit(
        5.0, 10.0, SERVICE_QUOTAS_PAGE
    ),
    ("service-quotas", "ListServiceQuotas"): Limit(10.0, 20.0, SERVICE_QUOTAS_PAGE),
    # The Price List Query API: "token bucket size" 10, "refill rate/second" 5, per operation.
    ("pricing", "DescribeServices"): Limit(5.0, 10.0, PRICING_PAGE),
    ("pricing", "GetAttributeValues"): Limit(5.0, 10.0, PRICING_PAGE),
    ("pricing", "GetProducts"): Limit(5.0, 10.0, PRICING_PAGE),
}


def limit_for(service: str, operation: str, mutating: bool) -> Limit | None:
    """The bucket a call of `operation` spends from, if AWS throttles it (None: not limited)."""
    found = LIMITS.get((service, operation))
    if found is not None:
        return found
    return LIMITS.get((service, "*mutation" if mutating else "*read"))


def scale_from_env() -> float:
    """SIM_AWS_THROTTLE_SCALE as a number (1 when unset)."""
    raw = os.environ.get(ENV_SCALE, "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            f"{ENV_SCALE} must be a number (0 turns throttling off), not {raw!r}"
        ) from None
    if value < 0:
        raise ValueError(f"{ENV_SCALE} must be 0 or more, not {raw!r}")
    return value


class Throttle:
    """The token buckets of one simulated account, by Region, service and bucket."""

    def __init__(self, scale: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.scale = scale
        self.clock = clock  # seconds, monotonic (a test may stop or advance it)
        self._lock = threading.Lock()
        # key -> (tokens, when they were counted)
        self._buckets: dict[tuple[str, str, str, str], tuple[float, float]] = {}
        self.throttled = 0

    def take(self, account: str, region: str, service: str, operation: str, mutating: bool) -> bool:
        """Take a token for one call; False when its bucket is empty (the call is throttled)."""
        limit = limit_for(service, operation, mutating)
        if limit is None or self.scale <= 0:
            return True
        rate, burst = limit.rate * self.scale, limit.burst * self.scale
        key = (account, region, service, limit.shared or operation)
        now = self.clock()
        with self._lock:
            tokens, then = self._buckets.get(key, (burst, now))
            tokens = min(burst, tokens + (now - then) * rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                self.throttled += 1
                return False
            self._buckets[key] = (tokens - 1.0, now)
            return True

    def reset(self) -> None:
        """Every bucket full again."""
        with self._lock:
            self._buckets.clear()

    def error(self, service: str, protocol: str) -> AwsError:
        """The answer to a throttled call, in the service's shape: its throttling code, at the
        status its model gives the code (EKS's ThrottlingException is 429) or the code implies
        (sim.aws.errors)."""
        return AwsError(throttling_code(service, protocol), "Rate exceeded")
