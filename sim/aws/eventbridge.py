"""AWS service events on the account's default event bus, delivered to the targets of the rules
that match them: the simulated services' state changes the way AWS sends them to EventBridge.

EventBridge itself (rules, targets, SQS queues, their policies) is moto's; what moto lacks is
AWS's own services putting events on the bus. `ServiceEvents.put` builds the event as AWS does
(the envelope of "Amazon EventBridge events", https://docs.aws.amazon.com/eventbridge/latest/ref/overiew-event-structure.html:
version, id, detail-type, source, account, time, region, resources, detail) and hands it to each
ENABLED rule of the default bus whose pattern matches (moto's matcher, which implements
EventBridge's pattern syntax), which delivers it to its SQS targets. As AWS does, an SQS target
gets the event only if the queue's policy lets `events.amazonaws.com` send to it ("Amazon SQS
permissions", https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-sqs-permissions);
otherwise the delivery fails and is counted (`failed_invocations`), as EventBridge's
FailedInvocations metric counts it. Targets of other kinds are not simulated (counted too).

Delivery is at once: AWS delivers service events "in near real time" and publishes no latency.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from sim.aws.context import SimContext

log = logging.getLogger(__name__)

EVENTS_PRINCIPAL = "events.amazonaws.com"


def _policy_allows(policy: str | None, queue_arn: str, rule_arn: str) -> bool:
    """Whether a queue policy lets EventBridge (for this rule) send messages to the queue."""
    try:
        document = json.loads(policy) if policy else {}
    except ValueError:
        return False
    statements = document.get("Statement") or []
    if isinstance(statements, dict):
        statements = [statements]
    for statement in statements:
        if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
            continue
        principal = statement.get("Principal") or {}
        services = principal.get("Service") if isinstance(principal, dict) else None
        services = [services] if isinstance(services, str) else services or []
        if EVENTS_PRINCIPAL not in services and principal != "*":
            continue
        actions = statement.get("Action") or []
        actions = [actions] if isinstance(actions, str) else actions
        if not any(a in ("sqs:SendMessage", "sqs:*", "*") for a in actions):
            continue
        resources = statement.get("Resource") or "*"
        resources = [resources] if isinstance(resources, str) else resources
        if not any(r in ("*", queue_arn) for r in resources):
            continue
        source = ((statement.get("Condition") or {}).get("ArnEquals") or {}).get("aws:SourceArn")
        if source is not None and rule_arn not in ([source] if isinstance(source, str) else source):
            continue
        return True
    return False


class ServiceEvents:
    """Puts the simulated services' events on the default event bus of the account and region."""

    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        self.put_count = 0
        self.delivered = 0
        self.failed_invocations = 0

    def put(
        self, source: str, detail_type: str, resources: list[str], detail: dict[str, Any]
    ) -> None:
        from moto.events.models import events_backends

        self.put_count += 1
        if self.ctx.account_id not in events_backends:
            return  # EventBridge never used in this account: no rule to deliver to
        backend = events_backends[self.ctx.account_id][self.ctx.region]
        bus = backend.event_buses.get("default")
        if bus is None:
            return
        event: dict[str, Any] = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": detail_type,
            "source": source,
            "account": self.ctx.account_id,
            # moto's SQS delivery writes it as ISO 8601 from epoch seconds
            "time": time.time(),
            "region": self.ctx.region,
            "resources": list(resources),
            "detail": json.loads(json.dumps(detail, default=str)),
        }
        for rule in list(bus.rules.values()):
            if rule.state != "ENABLED" or not rule.event_pattern.matches_event(event):  # type: ignore[arg-type]
                continue
            for target in list(rule.targets):
                self._deliver(rule, target, dict(event))

    def _deliver(self, rule: Any, target: dict[str, Any], event: dict[str, Any]) -> None:
        from moto.sqs.models import sqs_backends

        arn = str(target.get("Arn", ""))
        parts = arn.split(":")
        if len(parts) < 6 or parts[2] != "sqs":
            self.failed_invocations += 1
            log.info("event target %s not simulated (only SQS is)", arn)
            return
        queue_name = parts[5]
        sqs = sqs_backends[parts[4]][parts[3]]
        queue = sqs.queues.get(queue_name)
        if queue is None or not _policy_allows(queue.policy, queue.queue_arn, rule.arn):
            self.failed_invocations += 1
            return
        group = (target.get("SqsParameters") or {}).get("MessageGroupId")
        rule._send_to_sqs_queue(queue_name, event, group)
        self.delivered += 1
