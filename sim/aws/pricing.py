"""The AWS Price List Query API (`pricing`), simulated: DescribeServices, GetAttributeValues and
GetProducts over a small catalog of the products Hyperpilot prices (SageMaker HyperPod instances,
EC2 NAT gateways, FSx for Lustre storage).

Shapes follow the service's documentation
(https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html
and "Using the AWS Price List Query API",
https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-price-list-query-api.html):
`PriceList` is a list of JSON *strings*, one product each, with `product` (`productFamily`,
`attributes`, `sku`), `serviceCode`, `terms.OnDemand.<sku>.<offerTermCode>` whose
`priceDimensions.<rateCode>.pricePerUnit.USD` is the price as a decimal string, `version` and
`publicationDate`; `FormatVersion` is `aws_v1`. Filters are `TERM_MATCH` (exact), `EQUALS`,
`CONTAINS`, `ANY_OF` and `NONE_OF` (comma-separated values) on a product attribute or on
`productFamily` / `sku`.

AWS serves the API from us-east-1, eu-central-1 and ap-south-1 only (and the prices of every
region from each); the simulator answers on its one endpoint whatever region a request is signed
for, with the prices of its own region. The figures are list prices of the public pricing pages
as compiled on `PUBLICATION_DATE` (approximate; the simulator is their only source here).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sim.aws.context import SimContext
from sim.aws.errors import AwsError

Handler = Callable[[dict[str, Any]], dict[str, Any]]

PUBLICATION_DATE = "2026-11-20T18:04:12Z"
VERSION = "20261120180412"
FORMAT_VERSION = "aws_v1"
ON_DEMAND_TERM = "JRTCKXETXF"  # the offer term code AWS uses for On-Demand
RATE_CODE = "6YS6EN2CT7"
HOURS_PER_MONTH = 730

# SageMaker HyperPod on-demand USD per instance-hour (us-east-1) of the ml.* types the
# simulator's nodes run on.
HYPERPOD_HOURLY: dict[str, str] = {
    "ml.p5.48xlarge": "113.0680",
    "ml.p5e.48xlarge": "121.8720",
    "ml.p5en.48xlarge": "127.2240",
    "ml.p4d.24xlarge": "37.6880",
    "ml.p4de.24xlarge": "47.1100",
    "ml.g5.xlarge": "1.4080",
    "ml.g5.2xlarge": "1.5150",
    "ml.g5.4xlarge": "2.0300",
    "ml.g5.8xlarge": "3.0600",
    "ml.g5.12xlarge": "7.0900",
    "ml.g5.16xlarge": "5.1200",
    "ml.g5.24xlarge": "10.1800",
    "ml.g5.48xlarge": "20.3600",
    "ml.g6.12xlarge": "5.5400",
    "ml.trn1.32xlarge": "24.7250",
    "ml.trn2.48xlarge": "51.8400",
    "ml.c5.large": "0.1020",
    "ml.c5.xlarge": "0.2040",
    "ml.c5.2xlarge": "0.4080",
    "ml.c5.4xlarge": "0.8160",
    "ml.m5.large": "0.1150",
    "ml.m5.xlarge": "0.2300",
    "ml.m5.2xlarge": "0.4610",
    "ml.m5.4xlarge": "0.9220",
    "ml.m5.12xlarge": "2.7650",
    "ml.t3.medium": "0.0500",
    "ml.t3.large": "0.1000",
}
NAT_GATEWAY_HOURLY = "0.0450"
NAT_GATEWAY_GB = "0.0450"
# FSx for Lustre USD per GB-month of SSD storage, by deployment type and MB/s per TiB.
LUSTRE_GB_MONTH: dict[tuple[str, str], str] = {
    ("Scratch_2", "200"): "0.1400",
    ("Persistent_2", "125"): "0.1450",
    ("Persistent_2", "250"): "0.2100",
    ("Persistent_2", "500"): "0.3400",
    ("Persistent_2", "1000"): "0.6000",
}

_LOCATIONS = {
    "us-east-1": ("US East (N. Virginia)", "USE1"),
    "us-east-2": ("US East (Ohio)", "USE2"),
    "us-west-2": ("US West (Oregon)", "USW2"),
    "eu-west-1": ("EU (Ireland)", "EU"),
    "eu-central-1": ("EU (Frankfurt)", "EUC1"),
    "ap-south-1": ("Asia Pacific (Mumbai)", "APS3"),
    "ap-northeast-1": ("Asia Pacific (Tokyo)", "APN1"),
}

_SERVICES = {
    "AmazonSageMaker": "Amazon SageMaker",
    "AmazonEC2": "Amazon Elastic Compute Cloud",
    "AmazonFSx": "Amazon FSx",
}


@dataclass(frozen=True)
class Product:
    service_code: str
    family: str
    attributes: dict[str, str]
    unit: str
    price: str
    description: str

    @property
    def sku(self) -> str:
        key = json.dumps([self.service_code, self.family, self.attributes], sort_keys=True)
        return hashlib.sha1(key.encode()).hexdigest()[:16].upper()

    def field(self, name: str) -> str | None:
        if name == "productFamily":
            return self.family
        if name == "sku":
            return self.sku
        return self.attributes.get(name)

    def price_list_item(self) -> str:
        """The product as GetProducts answers it: one JSON document, as a string."""
        sku = self.sku
        term = f"{sku}.{ON_DEMAND_TERM}"
        dimension = f"{term}.{RATE_CODE}"
        document = {
            "product": {"productFamily": self.family, "attributes": self.attributes, "sku": sku},
            "serviceCode": self.service_code,
            "terms": {
                "OnDemand": {
                    term: {
                        "priceDimensions": {
                            dimension: {
                                "unit": self.unit,
                                "endRange": "Inf",
                                "description": self.description,
                                "appliesTo": [],
                                "rateCode": dimension,
                                "beginRange": "0",
                                "pricePerUnit": {"USD": f"{float(self.price):.10f}"},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": PUBLICATION_DATE,
                        "offerTermCode": ON_DEMAND_TERM,
                        "termAttributes": {},
                    }
                }
            },
            "version": VERSION,
            "publicationDate": PUBLICATION_DATE,
        }
        return json.dumps(document, separators=(",", ":"))


def catalog(region: str) -> list[Product]:
    """Every product the simulated price list holds for `region`."""
    location, prefix = _LOCATIONS.get(region, (region, region.upper().replace("-", "")))
    common = {"regionCode": region, "location": location, "locationType": "AWS Region"}
    products: list[Product] = []
    for instance_type, price in sorted(HYPERPOD_HOURLY.items()):
        products.append(
            Product(
                "AmazonSageMaker",
                "ML Instance",
                {
                    **common,
                    "servicecode": "AmazonSageMaker",
                    "servicename": _SERVICES["AmazonSageMaker"],
                    "instanceName": instance_type,
                    "instanceType": instance_type,
                    "component": "HyperPod",
                    "usagetype": f"{prefix}-Cluster:{instance_type}",
                    "operation": "RunInstance",
                },
                "Hrs",
                price,
                f"${float(price):.4f} per {instance_type} HyperPod cluster instance-hour",
            )
        )
    nat = {**common, "servicecode": "AmazonEC2", "servicename": _SERVICES["AmazonEC2"]}
    products.append(
        Product(
            "AmazonEC2",
            "NAT Gateway",
            {
                **nat,
                "group": "NGW:NatGateway",
                "usagetype": f"{prefix}-NatGateway-Hours",
                "operation": "NatGateway",
            },
            "Hrs",
            NAT_GATEWAY_HOURLY,
            f"${float(NAT_GATEWAY_HOURLY):.3f} per NAT Gateway Hour",
        )
    )
    products.append(
        Product(
            "AmazonEC2",
            "NAT Gateway",
            {
                **nat,
                "group": "NGW:NatGateway",
                "usagetype": f"{prefix}-NatGateway-Bytes",
                "operation": "NatGateway",
            },
            "GB",
            NAT_GATEWAY_GB,
            f"${float(NAT_GATEWAY_GB):.3f} per GB data processed by NAT Gateways",
        )
    )
    for (deployment, throughput), price in sorted(LUSTRE_GB_MONTH.items()):
        products.append(
            Product(
                "AmazonFSx",
                "Storage",
                {
                    **common,
                    "servicecode": "AmazonFSx",
                    "servicename": _SERVICES["AmazonFSx"],
                    "fileSystemType": "Lustre",
                    "storageType": "SSD",
                    "deploymentOption": deployment,
                    "throughputCapacity": throughput,
                    "usagetype": f"{prefix}-{deployment}-{throughput}-Storage",
                    "operation": "",
                },
                "GB-Mo",
                price,
                f"${float(price):.3f} per GB-month of Lustre {deployment} {throughput} MB/s/TiB",
            )
        )
    return products


def _matches(product: Product, filters: Iterable[dict[str, Any]]) -> bool:
    for f in filters:
        value = product.field(f["Field"])
        wanted = str(f["Value"])
        kind = f["Type"]
        options = [v.strip() for v in wanted.split(",")]
        if kind in ("TERM_MATCH", "EQUALS"):
            ok = value == wanted
        elif kind == "CONTAINS":
            ok = value is not None and wanted in value
        elif kind == "ANY_OF":
            ok = value in options
        else:  # NONE_OF
            ok = value not in options
        if not ok:
            return False
    return True


class Pricing:
    """The Price List Query API over every region's catalog: each of its endpoints answers for
    all regions, a request picking one with the `regionCode` (or `location`) filter ("Using the
    AWS Price List Query API", AWS Billing and Cost Management user guide)."""

    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        regions = dict.fromkeys([*_LOCATIONS, ctx.region])
        self.products = [p for region in regions for p in catalog(region)]

    def operations(self) -> dict[str, Handler]:
        return {
            "DescribeServices": self.describe_services,
            "GetAttributeValues": self.get_attribute_values,
            "GetProducts": self.get_products,
        }

    def _service(self, code: str) -> list[Product]:
        products = [p for p in self.products if p.service_code == code]
        if not products:
            raise AwsError(
                "NotFoundException",
                f"Service {code} is not found. Use DescribeServices for the service codes.",
            )
        return products

    @staticmethod
    def _format(p: dict[str, Any]) -> None:
        version = p.get("FormatVersion")
        if version is not None and version != FORMAT_VERSION:
            raise AwsError(
                "InvalidParameterException",
                f"FormatVersion {version} is not supported; the supported version is "
                f"{FORMAT_VERSION}.",
            )

    def describe_services(self, p: dict[str, Any]) -> dict[str, Any]:
        self._format(p)
        codes = [p["ServiceCode"]] if p.get("ServiceCode") else sorted(_SERVICES)
        services = []
        for code in codes:
            products = self._service(code)
            names = sorted({k for x in products for k in x.attributes})
            services.append({"ServiceCode": code, "AttributeNames": names})
        page, token = _page(services, p)
        return {"Services": page, "FormatVersion": FORMAT_VERSION, "NextToken": token}

    def get_attribute_values(self, p: dict[str, Any]) -> dict[str, Any]:
        products = self._service(p["ServiceCode"])
        name = p["AttributeName"]
        values = sorted({v for x in products if (v := x.attributes.get(name)) is not None})
        if not values:
            raise AwsError(
                "NotFoundException",
                f"Attribute {name} is not found for service {p['ServiceCode']}.",
            )
        page, token = _page([{"Value": v} for v in values], p)
        return {"AttributeValues": page, "NextToken": token}

    def get_products(self, p: dict[str, Any]) -> dict[str, Any]:
        self._format(p)
        products = self._service(p["ServiceCode"])
        filters = list(p.get("Filters") or [])
        known = {k for x in products for k in x.attributes} | {"productFamily", "sku"}
        for f in filters:
            if f["Field"] not in known:
                raise AwsError(
                    "InvalidParameterException",
                    f"Filter field {f['Field']} is not an attribute of {p['ServiceCode']}. "
                    "Use DescribeServices for its attribute names.",
                )
        found = [x.price_list_item() for x in products if _matches(x, filters)]
        page, token = _page(found, p)
        return {"FormatVersion": FORMAT_VERSION, "PriceList": page, "NextToken": token}


def _page(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    try:
        start = int(p.get("NextToken") or 0)
    except ValueError:
        raise AwsError(
            "InvalidNextTokenException", "The pagination token is invalid. Try again without it."
        ) from None
    size = int(p.get("MaxResults") or 100)
    return items[start : start + size], str(start + size) if start + size < len(items) else None
