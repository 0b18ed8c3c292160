"""A cluster's infrastructure at list prices (pure): its NAT gateway and the FSx for Lustre file
systems its claims mount, each priced from the table or listed unpriced, and added to the
cluster's cost per hour."""

from __future__ import annotations

from datetime import date

from cluster_svc.domain.prices import (
    HOURS_PER_MONTH,
    PriceTable,
    infrastructure_cost,
    infrastructure_per_hour,
    with_infrastructure,
)
from shared.contracts.capacity import (
    NO_RESOURCES,
    ClusterCapacity,
    FileSystemFacts,
    InfrastructureFacts,
    PriceSource,
)

SOURCE = PriceSource(
    source="AWS Price List API (test)", as_of=date(2026, 11, 1), region="us-east-1"
)
TABLE = PriceTable(
    source=SOURCE,
    instance_hour={"ml.g5.12xlarge": 7.09},
    nat_gateway_hour=0.045,
    lustre_gb_month={("PERSISTENT_2", 250): 0.29, ("SCRATCH_2", 200): 0.14},
)
FACTS = InfrastructureFacts(
    nat_gateways=1,
    file_systems=[
        FileSystemFacts(
            claim="fsx-claim",
            file_system_id="fs-0123456789abcdef0",
            source="default",
            capacity_gib=1200,
            deployment_type="PERSISTENT_2",
            throughput_per_tib=250,
        ),
        FileSystemFacts(
            claim="scratch",
            file_system_id="fs-0123456789abcdef1",
            source="existing",
            capacity_gib=2400,
            deployment_type="SCRATCH_2",
        ),
        FileSystemFacts(claim="old", file_system_id="fs-0123456789abcdef2", source="created"),
    ],
)


def test_each_resource_is_priced_from_the_table_or_listed_unpriced() -> None:
    items = infrastructure_cost(FACTS, TABLE)
    assert [(i.kind, i.name) for i in items] == [
        ("nat_gateway", "nat-gateway-1"),
        ("fsx_file_system", "fsx-claim"),
        ("fsx_file_system", "scratch"),
        ("fsx_file_system", "old"),
    ]
    nat, persistent, scratch, unknown = items
    assert nat.per_hour == 0.045
    assert persistent.per_hour == round(0.29 * 1200 / HOURS_PER_MONTH, 4)
    assert "1200 GiB PERSISTENT_2 250 MB/s/TiB" in persistent.description
    assert scratch.per_hour == round(0.14 * 2400 / HOURS_PER_MONTH, 4)  # one throughput: 200
    assert "existing" in scratch.description
    assert unknown.per_hour is None  # neither size nor type recorded: unpriced, not free


def test_the_cluster_cost_is_its_groups_plus_its_priced_infrastructure() -> None:
    capacity = ClusterCapacity(
        cluster="c",
        resources=NO_RESOURCES,
        groups=[],
        nodes=[],
        pending=[],
        cost_per_hour=14.18,
        unpriced_instance_types=[],
        prices=SOURCE,
    )
    priced = with_infrastructure(capacity, FACTS, TABLE)
    extra = sum(i.per_hour or 0.0 for i in priced.infrastructure)
    assert priced.cost_per_hour == round(14.18 + extra, 4)
    assert infrastructure_per_hour(FACTS, TABLE) == round(extra, 4)
    # nothing recorded: the answer is unchanged
    assert with_infrastructure(capacity, InfrastructureFacts(), TABLE) == capacity
    # no NAT price in the table: the gateway is listed unpriced
    bare = PriceTable(source=SOURCE)
    assert [i.per_hour for i in infrastructure_cost(InfrastructureFacts(nat_gateways=1), bare)] == [
        None
    ]
