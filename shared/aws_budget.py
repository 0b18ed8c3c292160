"""The AWS call budget: token buckets in PostgreSQL that every service replica spends from.

Two kinds of bucket, rows of `aws_call_buckets` (migration 0016), each changed by one atomic
upsert, so any number of replicas share them without a coordinator:

- **The account's rate** (`aws:<account>:<region>`): every AWS call a service makes takes a
  token before it is sent (`shared/adapters/aws_session.py` installs the hook on every client).
  A caller always gets its token at once; when the bucket is empty the token is borrowed
  (`tokens` goes below zero) and the caller sleeps until the refill reaches it, so concurrent
  callers across replicas are spaced at the declared rate in the order PostgreSQL served them.
  A throttling answer from AWS (`throttled`) empties the bucket for everyone for `penalty`
  seconds: one replica's throttle slows the whole fleet's calls, not just its own retry.
- **An operation's published rate** (`op:<account>:<region>:<service>:<operation>`): where
  AWS publishes a rate for an operation (or a bucket several share) below the account's
  (`PUBLISHED_LIMITS`: EC2's mutating actions, the Price List API, Service Quotas' reads), its
  calls take a token from that bucket too, borrowed and waited for the same way, so no burst of
  one operation goes beyond what AWS answers without throttling.
- **A watcher's declared budget** (`watch:<watcher>:<cluster>`): `WatchBudget.spend` takes the
  calls an observation will cost, or refuses (and the watcher skips the cluster this round).
  A watcher that spent its hour waits for the refill, except for a read an outside event asked
  for, which may take a bounded `overdraft` (the node watcher's: one hour's budget); the debt
  is repaid before anything else is spent, so the sustained rate stays the declared one.

The arithmetic is `refilled` and `wait_seconds` (pure, unit-tested); the SQL applies the same
formula inside PostgreSQL with `clock_timestamp()`, so the replicas' clocks do not matter.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from shared.logging import get_logger

log = get_logger("shared.aws_budget")

# The defaults: SageMaker and EKS throttle their describe and list calls per account and
# region; neither publishes a fixed rate for them (SageMaker's "Amazon SageMaker AI endpoints
# and quotas" lists API request rates as adjustable per account; EKS publishes none), so the
# control plane declares a conservative one: 10 calls a second with bursts of 20, across every
# replica and service, at or below every per-operation bucket in PUBLISHED_LIMITS but the few
# it also spends from (see `binding`).
DEFAULT_RATE = 10.0
DEFAULT_BURST = 20.0
DEFAULT_PENALTY = 1.0
# The longest a caller waits for a borrowed token before its call goes ahead anyway (a bucket
# deep in debt, e.g. after a long throttle, must not stall a stage beyond its own timeouts).
MAX_WAIT = 30.0


@dataclass(frozen=True)
class PublishedLimit:
    """A request rate AWS publishes for an operation: `burst` tokens, `rate` back a second;
    `shared` names the bucket when several operations spend from one."""

    rate: float
    burst: float
    source: str
    shared: str | None = None


_EC2 = "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"
_EVENTBRIDGE = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"
_SQS = (
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html"
)
_QUOTAS = "https://docs.aws.amazon.com/servicequotas/latest/userguide/reference_limits.html"
_PRICING = "https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-pelong.html"
_STS = (
    "https://aws.amazon.com/blogs/security/how-to-monitor-and-query-iam-resources-at-scale-part-2/"
)
_READ = PublishedLimit(20.0, 100.0, _EC2)
_MUTATION = PublishedLimit(5.0, 50.0, _EC2)
_UNPUBLISHED_READ = PublishedLimit(
    20.0, 100.0, f"not published; EC2's non-mutating bucket ({_EC2})"
)
_UNPUBLISHED_MUTATION = PublishedLimit(5.0, 50.0, f"not published; EC2's mutating bucket ({_EC2})")

# AWS's request rates per account and region, as the simulated AWS throttles them (the same
# numbers and pages as sim/aws/throttle.py's LIMITS, which the control plane may not import;
# tests/unit/test_aws_budget_limits.py keeps the two equal). "*read" and "*mutation" stand for
# the service's other operations that read, or change something. SageMaker, EKS and STS publish
# no rate: EC2's per-action buckets stand in for theirs. An operation not named is not limited
# by AWS beyond the account bucket (SQS's standard-queue calls are "nearly unlimited").
PUBLISHED_LIMITS: dict[tuple[str, str], PublishedLimit] = {
    ("ec2", "*read"): _READ,
    ("ec2", "*mutation"): _MUTATION,
    ("sagemaker", "*read"): _UNPUBLISHED_READ,
    ("sagemaker", "*mutation"): _UNPUBLISHED_MUTATION,
    ("eks", "*read"): _UNPUBLISHED_READ,
    ("eks", "*mutation"): _UNPUBLISHED_MUTATION,
    ("sts", "*read"): PublishedLimit(
        20.0, 100.0, f"not published ({_STS}); EC2's non-mutating bucket"
    ),
    ("sts", "*mutation"): PublishedLimit(
        5.0, 50.0, f"not published ({_STS}); EC2's mutating bucket"
    ),
    ("events", "PutEvents"): PublishedLimit(2400.0, 2400.0, _EVENTBRIDGE),
    ("events", "*read"): PublishedLimit(50.0, 50.0, _EVENTBRIDGE, shared="other-apis"),
    ("events", "*mutation"): PublishedLimit(50.0, 50.0, _EVENTBRIDGE, shared="other-apis"),
    ("sqs", "TagQueue"): PublishedLimit(30.0, 30.0, _SQS, shared="tagging"),
    ("sqs", "UntagQueue"): PublishedLimit(30.0, 30.0, _SQS, shared="tagging"),
    ("sqs", "ListQueueTags"): PublishedLimit(30.0, 30.0, _SQS, shared="tagging"),
    ("service-quotas", "GetAWSDefaultServiceQuota"): PublishedLimit(5.0, 10.0, _QUOTAS),
    ("service-quotas", "GetRequestedServiceQuotaChange"): PublishedLimit(5.0, 10.0, _QUOTAS),
    ("service-quotas", "GetServiceQuota"): PublishedLimit(5.0, 10.0, _QUOTAS),
    ("service-quotas", "ListAWSDefaultServiceQuotas"): PublishedLimit(10.0, 20.0, _QUOTAS),
    ("service-quotas", "ListRequestedServiceQuotaChangeHistory"): PublishedLimit(
        5.0, 10.0, _QUOTAS
    ),
    ("service-quotas", "ListRequestedServiceQuotaChangeHistoryByQuota"): PublishedLimit(
        5.0, 10.0, _QUOTAS
    ),
    ("service-quotas", "ListServiceQuotas"): PublishedLimit(10.0, 20.0, _QUOTAS),
    ("pricing", "DescribeServices"): PublishedLimit(5.0, 10.0, _PRICING),
    ("pricing", "GetAttributeValues"): PublishedLimit(5.0, 10.0, _PRICING),
    ("pricing", "GetProducts"): PublishedLimit(5.0, 10.0, _PRICING),
}

# AWS names its reads Describe/List/Get/...: the same prefixes as the simulated AWS's
# (sim/aws/wire.py is_mutating).
_READ_PREFIXES = (
    "Describe",
    "List",
    "Get",
    "Head",
    "Search",
    "BatchGet",
    "BatchDescribe",
    "Validate",
    "Lookup",
    "Select",
    "Estimate",
    "Check",
)


def published_limit(service: str, operation: str) -> PublishedLimit | None:
    """The published bucket a call of `operation` spends from, if any."""
    found = PUBLISHED_LIMITS.get((service, operation))
    if found is not None:
        return found
    kind = "*read" if operation.startswith(_READ_PREFIXES) else "*mutation"
    return PUBLISHED_LIMITS.get((service, kind))


# Tokens of an operation's bucket the control plane leaves unspent: AWS counts a request when
# it arrives, the bucket here when its token is taken, and the first request of a connection
# can arrive a tenth of a second or more after its take (seen against the simulated AWS: a
# borrowed token that was due exactly met an empty bucket there). One token is 1/rate seconds
# of such skew.
HEADROOM = 1.0


def binding(limit: PublishedLimit | None, rate: float, burst: float) -> PublishedLimit | None:
    """`limit` if an account bucket of `rate` and `burst` alone could go beyond it (or come
    within HEADROOM of its burst)."""
    if limit is None or (limit.rate >= rate and limit.burst - HEADROOM >= burst):
        return None
    return limit


def operation_bucket(limit: PublishedLimit, rate: float, burst: float) -> tuple[float, float]:
    """(capacity, refill a second) of an operation's bucket here: the published one less
    HEADROOM, and never more than the account bucket's."""
    return min(limit.burst - HEADROOM, burst), min(limit.rate, rate)


def operation_key(account: str, region: str, service: str, bucket: str) -> str:
    return f"op:{account}:{region}:{service}:{bucket}"


def refilled(tokens: float, capacity: float, rate: float, elapsed: float) -> float:
    """The tokens a bucket holds `elapsed` seconds after it held `tokens`."""
    return min(capacity, tokens + max(0.0, elapsed) * rate)


def wait_seconds(tokens_after: float, rate: float) -> float:
    """How long a caller that left the bucket at `tokens_after` waits for its token."""
    return 0.0 if tokens_after >= 0 else -tokens_after / rate


def account_key(account: str, region: str) -> str:
    return f"aws:{account}:{region}"


def watch_key(watcher: str, cluster: str) -> str:
    return f"watch:{watcher}:{cluster}"


# Take `$5` tokens from bucket `$1` (made with capacity $2, refill $3/s, full, if new). In one
# statement: the refill since the last change, the take, the count. Borrowing allowed.
_TAKE = (
    "INSERT INTO aws_call_buckets AS b (key, capacity, refill_per_second, tokens, calls)"
    " VALUES ($1::text, $2::float8, $3::float8, $2::float8 - $4::float8, $4::float8::bigint)"
    " ON CONFLICT (key) DO UPDATE SET"
    "  capacity = excluded.capacity, refill_per_second = excluded.refill_per_second,"
    "  tokens = LEAST(excluded.capacity, b.tokens"
    "   + EXTRACT(EPOCH FROM clock_timestamp() - b.updated_at) * excluded.refill_per_second)"
    "   - $4::float8,"
    "  updated_at = clock_timestamp(), calls = b.calls + $4::float8::bigint"
    " RETURNING tokens"
)

# The same without borrowing: the row changes only if the refilled bucket holds $4 tokens.
_TRY = (
    "INSERT INTO aws_call_buckets AS b (key, capacity, refill_per_second, tokens, calls,"
    " updated_at)"
    " SELECT $1::text, $2::float8, $3::float8, $2::float8 - $4::float8, $4::float8::bigint,"
    " COALESCE($5::timestamptz, clock_timestamp())"
    " WHERE $4::float8 - $6::float8 <= $2::float8"
    " ON CONFLICT (key) DO UPDATE SET"
    "  capacity = excluded.capacity, refill_per_second = excluded.refill_per_second,"
    "  tokens = LEAST(excluded.capacity, b.tokens"
    "   + EXTRACT(EPOCH FROM excluded.updated_at - b.updated_at) * excluded.refill_per_second)"
    "   - $4::float8,"
    "  updated_at = excluded.updated_at, calls = b.calls + $4::float8::bigint"
    " WHERE LEAST(excluded.capacity, b.tokens"
    "   + EXTRACT(EPOCH FROM excluded.updated_at - b.updated_at) * excluded.refill_per_second)"
    "   - $4::float8 >= -$6::float8"
    " RETURNING tokens"
)

# Calls made beyond what was taken (an observation dearer than foreseen): always recorded, the
# bucket going below zero if need be, so the next observations wait for it.
_CHARGE = (
    "UPDATE aws_call_buckets SET tokens = tokens - $2::float8,"
    " calls = calls + $2::float8::bigint WHERE key = $1"
)

# A throttling answer: nobody's next token comes before `$2` seconds from now.
_THROTTLED = (
    "UPDATE aws_call_buckets SET"
    " tokens = LEAST(LEAST(capacity, tokens"
    "  + EXTRACT(EPOCH FROM clock_timestamp() - updated_at) * refill_per_second),"
    "  -$2::float8 * refill_per_second),"
    " updated_at = clock_timestamp(), throttled = throttled + 1"
    " WHERE key = $1"
)


@dataclass(frozen=True)
class BucketFigures:
    """One bucket as stored: for reports and tests."""

    key: str
    tokens: float
    calls: int
    throttled: int


async def figures(pool: asyncpg.Pool, prefix: str = "") -> list[BucketFigures]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT key, tokens, calls, throttled FROM aws_call_buckets"
            " WHERE starts_with(key, $1) ORDER BY key",
            prefix,
        )
    return [BucketFigures(r["key"], r["tokens"], r["calls"], r["throttled"]) for r in rows]


def _positive(name: str, value: float) -> float:
    if not value > 0:
        raise ValueError(f"{name} must be greater than 0 (got {value!r}): declare a rate of calls")
    return value


class AccountLimiter:
    """The account-and-region bucket, from the event loop (`take`) or from the threads boto3
    calls run in (`gate`, which sends the take to the loop and sleeps in its own thread)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        account: str | Callable[[], str],
        *,
        rate: float = DEFAULT_RATE,
        burst: float = DEFAULT_BURST,
        penalty: float = DEFAULT_PENALTY,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.pool = pool
        # The account names the bucket; given, or resolved on the first call (STS
        # GetCallerIdentity, itself not spent: it is the call that names the bucket).
        self._account = account if isinstance(account, str) else None
        self._resolve = account if callable(account) else None
        self._local = threading.local()
        self.rate = _positive("rate", rate)
        self.burst = _positive("burst", burst)
        self.penalty = _positive("penalty", penalty)
        self._sleep = sleep
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self.waited = 0.0  # seconds this process's callers slept for tokens

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the pool belongs to (where `gate` sends its statements)."""
        self._loop = loop
        self._loop_thread = threading.get_ident()

    @property
    def account(self) -> str | None:
        return self._account

    def _account_now(self) -> str | None:
        if self._account is None and self._resolve is not None:
            self._local.resolving = True
            try:
                self._account = self._resolve()
            except Exception as exc:
                log.warning("aws account not resolvable", error=f"{type(exc).__name__}: {exc}")
            finally:
                self._local.resolving = False
        return self._account

    async def take(
        self,
        region: str,
        account: str | None = None,
        service: str | None = None,
        operation: str | None = None,
    ) -> float:
        """Take one token (and one of the operation's published bucket, where it is tighter
        than the account's); returns the seconds to wait before the call goes out."""
        name = account or self._account or "unresolved"
        limit = (
            binding(published_limit(service, operation), self.rate, self.burst)
            if service and operation
            else None
        )
        async with self.pool.acquire() as conn:
            tokens = await conn.fetchval(
                _TAKE, account_key(name, region), self.burst, self.rate, 1.0
            )
            wait = wait_seconds(float(tokens), self.rate)
            if limit is not None and service and operation:
                key = operation_key(name, region, service, limit.shared or operation)
                capacity, rate = operation_bucket(limit, self.rate, self.burst)
                left = await conn.fetchval(_TAKE, key, capacity, rate, 1.0)
                wait = max(wait, wait_seconds(float(left), rate))
        return min(MAX_WAIT, wait)

    async def throttled(self, region: str, account: str | None = None) -> None:
        key = account_key(account or self._account or "unresolved", region)
        async with self.pool.acquire() as conn:
            await conn.execute(_THROTTLED, key, self.penalty)

    def _run(self, make: Callable[[], Awaitable[float | None]]) -> float | None:
        loop = self._loop
        if loop is None or loop.is_closed() or threading.get_ident() == self._loop_thread:
            # Called on the loop itself (a blocking boto3 call there would stall the loop
            # anyway) or after shutdown: no shared bucket reachable from here.
            return None

        async def run() -> float | None:
            return await make()

        try:
            return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=MAX_WAIT)
        except Exception as exc:  # the database down must not stop AWS calls
            log.warning("aws call budget unreachable", error=f"{type(exc).__name__}: {exc}")
            return None

    def gate(self, region: str, service: str | None = None, operation: str | None = None) -> None:
        """Before an AWS request is sent (a boto3 worker thread): take a token, wait for it."""
        if getattr(self._local, "resolving", False):
            return
        account = self._account_now()
        wait = self._run(lambda: self.take(region, account, service, operation))
        if wait:
            self.waited += wait
            self._sleep(wait)

    def report_throttled(self, region: str) -> None:
        """AWS answered with a throttling error (a boto3 worker thread)."""

        if getattr(self._local, "resolving", False):
            return
        account = self._account_now()

        async def mark() -> None:
            await self.throttled(region, account)

        self._run(mark)


class WatchBudget:
    """A watcher's declared AWS calls per cluster per hour (the node watcher's, the drift
    watcher's): `spend` before an observation, skip the cluster when it says no.

    The bucket holds `burst` calls (at least one observation's worth) and refills at
    `per_hour / 3600` a second, so over any hour a cluster costs at most `per_hour + burst`
    (plus the `overdraft` a read on credit may take) and, sustained, `per_hour`.
    """

    def __init__(
        self,
        pool: asyncpg.Pool,
        watcher: str,
        per_hour: float,
        burst: float | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.pool = pool
        # The refill's clock: PostgreSQL's (None), or the caller's (an hour simulated faster).
        self.clock = clock
        self.watcher = watcher
        self.per_hour = _positive("per_hour", per_hour)
        self.burst = _positive("burst", burst if burst is not None else max(1.0, per_hour / 6))

    async def spend(self, cluster: str, calls: float, *, overdraft: float = 0.0) -> bool:
        """Take `calls` from the cluster's budget if it holds them, or if taking them leaves
        it no lower than `-overdraft` (a read on credit, repaid by the refill before anything
        else is spent); False leaves it unchanged."""
        if calls <= 0:
            return True
        async with self.pool.acquire() as conn:
            left = await conn.fetchval(
                _TRY,
                watch_key(self.watcher, cluster),
                max(self.burst, calls),
                self.per_hour / 3600.0,
                float(calls),
                self.clock() if self.clock is not None else None,
                float(overdraft),
            )
        return left is not None

    async def charge(self, cluster: str, calls: float) -> None:
        """Record `calls` made beyond what `spend` took (the bucket may go below zero)."""
        if calls > 0:
            async with self.pool.acquire() as conn:
                await conn.execute(_CHARGE, watch_key(self.watcher, cluster), float(calls))
