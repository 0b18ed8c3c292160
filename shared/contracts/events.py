"""One model per event. An event is past tense; its subject is `evt.<domain>.<what>`."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

EVENTS: dict[str, type[Event]] = {}


class Event(BaseModel):
    """Every concrete event registers itself by name."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    what: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "what" in cls.__dict__:
            if cls.__name__ in EVENTS:
                raise TypeError(f"two events are named {cls.__name__}")
            EVENTS[cls.__name__] = cls


class OperationAccepted(Event):
    what = "operation_accepted"
    kind: str
    target_type: str
    target_id: str
    request: dict[str, Any] = {}  # the change as requested (only the fields the caller sent)


class OperationStarted(Event):
    what = "operation_started"
    kind: str
    attempt: int


class OperationSucceeded(Event):
    what = "operation_succeeded"
    kind: str
    result: dict[str, Any] = {}


class OperationNoop(Event):
    what = "operation_noop"
    kind: str
    reason: str


class OperationFailed(Event):
    what = "operation_failed"
    kind: str
    error: dict[str, Any]


class OperationCancelled(Event):
    what = "operation_cancelled"
    kind: str
    stages: list[str]  # the stages that were stopped


class CancelRequested(Event):
    what = "cancel_requested"
    kind: str


class OperationRetried(Event):
    what = "operation_retried"
    kind: str
    attempt: int
    stages: list[str]


class StageStarted(Event):
    what = "stage_started"
    stage: str
    title: str
    attempt: int


class StageSubmitted(Event):
    what = "stage_submitted"
    stage: str
    external_id: str


class StageProgress(Event):
    what = "stage_progress"
    stage: str
    message: str


class StageSucceeded(Event):
    what = "stage_succeeded"
    stage: str
    noop: bool = False
    outputs: dict[str, Any] = {}


class StageFailed(Event):
    what = "stage_failed"
    stage: str
    error: dict[str, Any]


class StageRetrying(Event):
    """A temporary error (throttling, 5xx) inside a stage, retried after a delay."""

    what = "stage_retrying"
    stage: str
    error: dict[str, Any]
    delay_seconds: float


class BucketCreated(Event):
    what = "bucket_created"
    name: str
    region: str
    arn: str


class BucketDeleted(Event):
    what = "bucket_deleted"
    name: str
    region: str


class ActiveClusterChanged(Event):
    what = "active_cluster_changed"
    name: str
    previous: str | None


class ClusterCreated(Event):
    what = "cluster_created"
    name: str
    eks_cluster_arn: str | None
    hyperpod_cluster_arn: str | None


class ClusterDeleted(Event):
    what = "cluster_deleted"
    name: str


class ClusterImported(Event):
    what = "cluster_imported"
    name: str
    eks_cluster_arn: str
    hyperpod_cluster_arn: str | None
