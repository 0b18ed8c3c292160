"""The control plane's queue of AWS events: one SQS queue per account and region, the target of
one EventBridge rule (shared/wake.py's pattern), both made idempotently; its long poll.

- CreateQueue answers the existing queue's URL when the attributes asked for match
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html),
  so the same attributes are always asked for; the policy is set apart (SetQueueAttributes).
- PutRule and PutTargets create or replace (same name, same target id): repeatable.
- The queue policy lets `events.amazonaws.com` send to it, for this rule only (EventBridge's
  "Amazon SQS permissions": https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-sqs-permissions).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from cluster_svc.adapters.aws import AwsClients, stage_error
from shared.boundary import event_rule_name, sqs_queue_name
from shared.wake import EVENT_PATTERN

T = TypeVar("T")

# Long poll: the longest SQS allows (ReceiveMessage, WaitTimeSeconds 0 to 20).
WAIT_SECONDS = 20
# A received message not deleted (its replica died while handling it) is received again this
# soon, by any replica.
VISIBILITY_SECONDS = 5
# Events older than this are worth nothing to a stage wait (it has polled since).
RETENTION_SECONDS = 3600


def queue_policy(queue_arn: str, rule_arn: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "EventBridgeToQueue",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}},
            }
        ],
    }


def _in_daemon_thread(call: Callable[[], T]) -> Awaitable[T]:
    """`call` in a thread of its own that does not hold the process up: a long poll waits up to
    20 s for its answer, and the default executor's threads are joined at shutdown, so a
    service stopping would wait for the poll to end (or be killed for it)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def run() -> None:
        try:
            result = call()
        except BaseException as exc:  # handed to the awaiting task
            done = functools.partial(settle, functools.partial(future.set_exception, exc))
        else:
            done = functools.partial(settle, functools.partial(future.set_result, result))
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(done)

    threading.Thread(target=run, name="sqs-long-poll", daemon=True).start()
    return future


@dataclass(frozen=True)
class Message:
    receipt: str
    body: str


class EventQueue:
    def __init__(self, aws: AwsClients, region: str) -> None:
        self.aws = aws
        self.region = region
        self.queue_name = sqs_queue_name("hyperpilot", "aws-events", region)
        self.rule_name = event_rule_name("hyperpilot", "aws-events")
        self.url: str | None = None

    async def _call(
        self, service: str, operation: str, *, long_poll: bool = False, **params: Any
    ) -> Any:
        method = getattr(self.aws.client(service, self.region), operation)
        call = functools.partial(method, **params)
        try:
            return await (_in_daemon_thread(call) if long_poll else asyncio.to_thread(call))
        except (ClientError, BotoCoreError) as exc:
            raise stage_error(exc) from exc

    async def ensure(self) -> str:
        """The queue and its rule, made if missing; returns the queue's URL."""
        made = await self._call(
            "sqs",
            "create_queue",
            QueueName=self.queue_name,
            Attributes={"MessageRetentionPeriod": str(RETENTION_SECONDS)},
            tags={"managed-by": "hyperpilot"},
        )
        url = str(made["QueueUrl"])
        attributes = await self._call(
            "sqs", "get_queue_attributes", QueueUrl=url, AttributeNames=["QueueArn"]
        )
        queue_arn = str(attributes["Attributes"]["QueueArn"])
        rule = await self._call(
            "events",
            "put_rule",
            Name=self.rule_name,
            EventPattern=json.dumps(EVENT_PATTERN),
            State="ENABLED",
            Description="SageMaker HyperPod state changes for Hyperpilot's stage waits",
        )
        await self._call(
            "sqs",
            "set_queue_attributes",
            QueueUrl=url,
            Attributes={"Policy": json.dumps(queue_policy(queue_arn, str(rule["RuleArn"])))},
        )
        await self._call(
            "events",
            "put_targets",
            Rule=self.rule_name,
            Targets=[{"Id": "queue", "Arn": queue_arn}],
        )
        self.url = url
        return url

    async def receive(self, wait: int = WAIT_SECONDS) -> list[Message]:
        """Up to 10 messages, waiting up to `wait` seconds for the first."""
        assert self.url is not None, "ensure() first"
        answer = await self._call(
            "sqs",
            "receive_message",
            long_poll=True,
            QueueUrl=self.url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=wait,
            VisibilityTimeout=VISIBILITY_SECONDS,
        )
        return [
            Message(str(m["ReceiptHandle"]), str(m.get("Body", "")))
            for m in answer.get("Messages") or []
        ]

    async def delete(self, messages: list[Message]) -> None:
        if not messages:
            return
        assert self.url is not None, "ensure() first"
        await self._call(
            "sqs",
            "delete_message_batch",
            QueueUrl=self.url,
            Entries=[{"Id": str(i), "ReceiptHandle": m.receipt} for i, m in enumerate(messages)],
        )
