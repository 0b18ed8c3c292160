"""A plan: what a mutation would do, computed from actual state, without doing it.

Every mutation accepts `dry_run=true` and answers with its plan; the same computation decides
the real operation, so "requested equals actual" is a plan with `noop` and no calls.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from shared.contracts.capacity import PriceSource


class FieldChange(BaseModel):
    actual: Any = None
    requested: Any = None


class PlannedCall(BaseModel):
    service: str  # e.g. sagemaker, eks, iam
    operation: str  # botocore operation name, e.g. UpdateCluster
    params: dict[str, Any] = Field(default_factory=dict)


class PlannedObject(BaseModel):
    action: Literal["apply", "delete", "patch"]
    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    body: dict[str, Any] | None = None


class CostItem(BaseModel):
    """One priced resource a plan adds (a negative quantity: removes)."""

    kind: Literal["instance_group", "nat_gateway", "fsx_file_system"]
    name: str
    description: str = Field(description='e.g. "instance group gpu: +2 x ml.p5.48xlarge"')
    quantity: int = Field(description="Instances, gateways or GiB added")
    unit_price: float = Field(description="USD per unit and hour")
    unit: str = Field(description="instance-hour, hour or GiB-hour")
    per_hour: float = Field(description="quantity x unit price, USD/h")


class PlanCost(BaseModel):
    """What a plan adds per hour at list prices: the sum of its priced items."""

    adds_per_hour: float = Field(description="Sum of the items' per_hour, USD/h")
    items: list[CostItem]
    unpriced: list[str] = Field(description="Resources the price table has no price for")
    prices: PriceSource


class Plan(BaseModel):
    command: str  # the command type, e.g. UpdateInstanceGroup
    target: str  # e.g. llm-training/instance-groups/gpu
    noop: bool  # requested already equals actual: no call would be made
    diff: dict[str, FieldChange] = Field(default_factory=dict)  # only what would change
    calls: list[PlannedCall] = Field(default_factory=list)
    objects: list[PlannedObject] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    cost: PlanCost | None = None  # what it adds per hour at list prices, if it adds anything
