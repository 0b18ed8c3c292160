"""The account reads answered over NATS request/reply (`shared.queries`): `qry.cluster.<name>`.
AWS failures keep AWS's code and message, with a hint of what to check (`aws_hint`)."""

from __future__ import annotations

import re
from typing import Any, Protocol

from pydantic import ValidationError

from cluster_svc.domain.inspection import Problem
from cluster_svc.domain.prices import PriceTable
from shared.contracts.cluster import ML_INSTANCE_PATTERN, ZONE_ID_PATTERN, ClusterSpec
from shared.contracts.subjects import query_subject
from shared.errors import StageError, TemporaryError
from shared.queries import BadRequest, Route, temporary_hint
from shared.regions import check_served
from shared.service import Area
from shared.validation import RuleViolation

AVAILABILITY_ZONES = query_subject("cluster", "availability_zones")
INSTANCE_TYPES = query_subject("cluster", "instance_types")
QUOTAS = query_subject("cluster", "quotas")
TRAINING_PLANS = query_subject("cluster", "training_plans")
CLUSTERS = query_subject("cluster", "clusters")
CHECK_CREATE = query_subject("cluster", "check_create")
SUBJECTS = (AVAILABILITY_ZONES, INSTANCE_TYPES, QUOTAS, TRAINING_PLANS, CLUSTERS, CHECK_CREATE)


class Inspecting(Protocol):
    """What the responder asks of the inspector (`adapters.inspect.Inspector`)."""

    @property
    def region(self) -> str: ...

    @property
    def served(self) -> tuple[str, ...]: ...

    async def availability_zones(self) -> list[dict[str, Any]]: ...

    async def instance_types(
        self, availability_zone_id: str | None = None
    ) -> list[dict[str, Any]]: ...

    async def quota(self, instance_type: str) -> dict[str, Any]: ...

    async def training_plans(self) -> list[dict[str, Any]]: ...

    async def clusters(self) -> list[dict[str, Any]]: ...

    async def check_create(self, spec: ClusterSpec, region: str) -> list[Problem]: ...


class PriceReads(Protocol):
    """The price table (`adapters.pricing.PriceList`)."""

    async def table(self) -> PriceTable: ...


def _optional(request: dict[str, Any], key: str, pattern: str, example: str) -> str | None:
    value = request.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not re.match(pattern, value):
        raise BadRequest(f"{key} {value!r} is not valid", f"pass a value like {example}")
    return value


def _required(request: dict[str, Any], key: str, pattern: str, example: str) -> str:
    value = _optional(request, key, pattern, example)
    if value is None:
        raise BadRequest(f"{key} is required", f"pass a value like {example}")
    return value


def inspect_area(inspector: Inspecting, prices: PriceReads) -> Area:
    """The inspect queries, answered with one inspector (in the region each query names)."""
    return Area(read_routes=Inspect(inspector, prices).routes())


class Inspect:
    def __init__(self, inspector: Inspecting, prices: PriceReads) -> None:
        self.inspector = inspector
        self.prices = prices

    def routes(self) -> dict[str, Route]:
        return {
            AVAILABILITY_ZONES: self._availability_zones,
            INSTANCE_TYPES: self._instance_types,
            QUOTAS: self._quotas,
            TRAINING_PLANS: self._training_plans,
            CLUSTERS: self._clusters,
            CHECK_CREATE: self._check_create,
        }

    def _region(self, request: dict[str, Any]) -> None:
        """The asked region is served (the reads then go to it, `shared.service`)."""
        region = request.get("region")
        try:
            check_served(region if region is None else str(region), self.inspector.served)
        except RuleViolation as exc:
            raise BadRequest(str(exc), exc.hint) from exc

    async def _availability_zones(self, request: dict[str, Any]) -> Any:
        self._region(request)
        return await self.inspector.availability_zones()

    async def _instance_types(self, request: dict[str, Any]) -> Any:
        self._region(request)
        zone = _optional(request, "availability_zone_id", ZONE_ID_PATTERN, "use1-az2")
        types = await self.inspector.instance_types(zone)
        try:
            table: PriceTable | None = await self.prices.table()
        except StageError:
            table = None  # the types are still listed; each says it is unpriced
        for item in types:
            item["price_per_hour"] = table.instance(item["instance_type"]) if table else None
            item["price_as_of"] = table.source.as_of.isoformat() if table else None
        return types

    async def _quotas(self, request: dict[str, Any]) -> Any:
        self._region(request)
        instance_type = _required(request, "instance_type", ML_INSTANCE_PATTERN, "ml.p5.48xlarge")
        return await self.inspector.quota(instance_type)

    async def _training_plans(self, request: dict[str, Any]) -> Any:
        self._region(request)
        return await self.inspector.training_plans()

    async def _clusters(self, request: dict[str, Any]) -> Any:
        self._region(request)
        return await self.inspector.clusters()

    async def _check_create(self, request: dict[str, Any]) -> Any:
        spec_json = request.get("spec")
        if not isinstance(spec_json, dict):
            raise BadRequest("spec is required", "send the cluster spec as a JSON object")
        try:
            spec = ClusterSpec.from_payload(spec_json)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "spec"
            hint = getattr(first.get("ctx", {}).get("error"), "hint", None)
            raise BadRequest(f"spec.{where}: {first['msg']}", hint or "fix the spec") from exc
        region = request.get("region") or self.inspector.region
        problems = await self.inspector.check_create(spec, str(region))
        return [p.to_json() for p in problems]


def aws_hint(exc: StageError) -> str:
    """The hint of an AWS refusal that came without one."""
    if isinstance(exc, TemporaryError):
        return temporary_hint(exc)
    code = exc.code
    if code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation"):
        return "grant cluster-svc's role this read (docs/operations.md: Real AWS credentials)"
    if code in ("UnrecognizedClientException", "InvalidClientTokenId", "ExpiredToken"):
        return "check cluster-svc's AWS credentials"
    return "check the request; AWS's message says what it rejected"
