"""Service Quotas, simulated from the account's quota table (sim.aws.account)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.aws.account import Quota
from sim.aws.context import SimContext
from sim.aws.errors import AwsError

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class ServiceQuotas:
    """GetServiceQuota, ListServiceQuotas, the AWS defaults, and increase requests."""

    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        self.requests: list[dict[str, Any]] = []

    def operations(self) -> dict[str, Handler]:
        return {
            "GetServiceQuota": self.get_service_quota,
            "ListServiceQuotas": self.list_service_quotas,
            "GetAWSDefaultServiceQuota": self.get_default_quota,
            "ListAWSDefaultServiceQuotas": self.list_default_quotas,
            "ListServices": self.list_services,
            "RequestServiceQuotaIncrease": self.request_increase,
            "ListRequestedServiceQuotaChangeHistory": self.list_requests,
        }

    def _view(self, quota: Quota, default: bool = False) -> dict[str, Any]:
        return {
            "ServiceCode": quota.service_code,
            "ServiceName": quota.service_name,
            "QuotaArn": f"arn:aws:servicequotas:{self.ctx.region}:{self.ctx.account_id}:"
            f"{quota.service_code}/{quota.code}",
            "QuotaCode": quota.code,
            "QuotaName": quota.name,
            "Value": quota.default if default else quota.value,
            "Unit": quota.unit,
            "Adjustable": quota.adjustable,
            "GlobalQuota": False,
            "QuotaAppliedAtLevel": "ACCOUNT",
        }

    def _quota(self, p: dict[str, Any]) -> Quota:
        quota = self.ctx.account.quotas.get((p["ServiceCode"], p["QuotaCode"]))
        if quota is None:
            raise AwsError(
                "NoSuchResourceException",
                f"The request failed because the specified quota {p['QuotaCode']} of service "
                f"{p['ServiceCode']} does not exist.",
            )
        return quota

    def _service(self, code: str) -> list[Quota]:
        quotas = [q for q in self.ctx.account.quotas.values() if q.service_code == code]
        if not quotas:
            raise AwsError(
                "NoSuchResourceException",
                f"The request failed because the specified service {code} does not exist.",
            )
        return quotas

    def get_service_quota(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"Quota": self._view(self._quota(p))}

    def get_default_quota(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"Quota": self._view(self._quota(p), default=True)}

    def list_service_quotas(self, p: dict[str, Any]) -> dict[str, Any]:
        quotas = self._service(p["ServiceCode"])
        if p.get("QuotaCode"):
            quotas = [q for q in quotas if q.code == p["QuotaCode"]]
        page, token = _page(quotas, p)
        return {"Quotas": [self._view(q) for q in page], "NextToken": token}

    def list_default_quotas(self, p: dict[str, Any]) -> dict[str, Any]:
        page, token = _page(self._service(p["ServiceCode"]), p)
        return {"Quotas": [self._view(q, default=True) for q in page], "NextToken": token}

    def list_services(self, p: dict[str, Any]) -> dict[str, Any]:
        services = sorted(
            {(q.service_code, q.service_name) for q in self.ctx.account.quotas.values()}
        )
        page, token = _page(services, p)
        return {
            "Services": [{"ServiceCode": c, "ServiceName": n} for c, n in page],
            "NextToken": token,
        }

    def request_increase(self, p: dict[str, Any]) -> dict[str, Any]:
        quota = self._quota(p)
        if p["DesiredValue"] <= quota.value:
            raise AwsError(
                "IllegalArgumentException",
                "The desired value must be greater than the current value.",
            )
        request = {
            "Id": f"{len(self.requests) + 1:032x}",
            "CaseId": f"{len(self.requests) + 170000:d}",
            "ServiceCode": quota.service_code,
            "ServiceName": quota.service_name,
            "QuotaCode": quota.code,
            "QuotaName": quota.name,
            "DesiredValue": p["DesiredValue"],
            "Status": "CASE_OPENED",
            "Created": self.ctx.now(),
            "LastUpdated": self.ctx.now(),
            "Requester": f"arn:aws:iam::{self.ctx.account_id}:root",
            "QuotaArn": self._view(quota)["QuotaArn"],
            "GlobalQuota": False,
            "Unit": quota.unit,
            "QuotaRequestedAtLevel": "ACCOUNT",
        }
        self.requests.append(request)
        return {"RequestedQuota": request}

    def list_requests(self, p: dict[str, Any]) -> dict[str, Any]:
        items = [r for r in self.requests if p.get("ServiceCode") in (None, r["ServiceCode"])]
        page, token = _page(items, p)
        return {"RequestedQuotas": page, "NextToken": token}


def _page(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    try:
        start = int(p.get("NextToken") or 0)
    except ValueError:
        raise AwsError("InvalidPaginationTokenException", "Invalid pagination token") from None
    size = int(p.get("MaxResults") or 100)
    return items[start : start + size], str(start + size) if start + size < len(items) else None
