"""Decisions of the network stages, against an in-memory EC2."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_svc.domain import network
from cluster_svc.domain.network import ANYWHERE, Rule, cluster_tags, ensure_compute_subnet
from shared.errors import PermanentError, TemporaryError
from shared.stages import Done, Pending, Submitted
from tests.cluster_network.fakes import FakeEc2
from tests.cluster_network.helpers import by_name, context, create_command, delete_command, drive

NETWORK_KEYS = {
    "vpc_id",
    "vpc_cidr",
    "created_vpc",
    "public_subnet_ids",
    "private_subnet_ids",
    "private_route_table_id",
    "nat_gateway_id",
    "internet_gateway_id",
    "zone_ids",
    "created",
}


async def build(ec2: FakeEc2, command: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Run the three create stages to completion (the NAT gateway turns available at once)."""
    ec2.nat_starts = "available"
    stages = by_name(network.create_stages(ec2))
    outputs: dict[str, dict[str, Any]] = {}
    outputs["network"] = (await drive(stages["network"], command)).outputs
    for name in ("security_group", "compute_subnet"):
        outputs[name] = (await drive(stages[name], command, outputs)).outputs
    return outputs


async def test_network_waits_for_the_nat_gateway_then_routes_private_subnets_through_it() -> None:
    ec2 = FakeEc2()
    command = create_command("llm")
    stage = by_name(network.create_stages(ec2))["network"]
    submitted = await stage.run(context("network", command))
    assert isinstance(submitted, Submitted)
    out = submitted.outputs
    assert submitted.external_id == out["nat_gateway_id"]
    assert out["zone_ids"] == ["use1-az2", "use1-az1"]
    subnets = ec2.subnet_map
    assert [subnets[s].zone_id for s in out["public_subnet_ids"]] == ["use1-az2", "use1-az1"]
    assert [subnets[s].zone_id for s in out["private_subnet_ids"]] == ["use1-az2", "use1-az1"]
    assert ec2.nats[out["nat_gateway_id"]].subnet_id == out["public_subnet_ids"][0]
    public = ec2.tables[out["public_route_table_id"]]
    assert public.routes[ANYWHERE] == out["internet_gateway_id"]
    assert sorted(public.associations.values()) == sorted(out["public_subnet_ids"])
    private = ec2.tables[out["private_route_table_id"]]
    assert ANYWHERE not in private.routes  # no default route before the gateway is available
    assert sorted(private.associations.values()) == sorted(out["private_subnet_ids"])

    ctx = context("network", command, external_id=submitted.external_id, own=out)
    assert stage.poll is not None
    pending = await stage.poll(ctx)
    assert isinstance(pending, Pending) and "pending" in (pending.progress or "")
    ec2.set_nat_state(out["nat_gateway_id"], "available")
    done = await stage.poll(ctx)
    assert isinstance(done, Done)
    assert set(done.outputs) >= NETWORK_KEYS
    assert ec2.tables[out["private_route_table_id"]].routes[ANYWHERE] == out["nat_gateway_id"]
    created = done.outputs["created"]
    assert created["vpc"] == [out["vpc_id"]] and done.outputs["created_vpc"] is True
    assert len(created["subnets"]) == 4 and len(created["route_tables"]) == 2
    assert ec2.vpcs[out["vpc_id"]].tags["hyperpilot:cluster"] == "llm"
    assert ec2.vpcs[out["vpc_id"]].tags["managed-by"] == "hyperpilot"


async def test_a_second_run_mutates_nothing_and_finds_the_same_network() -> None:
    ec2 = FakeEc2()
    command = create_command("llm", tags={"team": "ml"})
    first = await build(ec2, command)
    before = ec2.mutations()
    second = await build(ec2, command)
    assert ec2.mutations() == before
    assert second == first
    assert ec2.vpcs[first["network"]["vpc_id"]].tags["team"] == "ml"


async def test_a_crash_after_the_elastic_ip_does_not_allocate_a_second_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ec2 = FakeEc2()
    command = create_command("llm")
    original = ec2.create_nat_gateway
    failures = iter([TemporaryError("InternalError", "boom")])

    async def flaky(*args: Any) -> Any:
        for exc in failures:
            raise exc
        return await original(*args)

    monkeypatch.setattr(ec2, "create_nat_gateway", flaky)
    stage = by_name(network.create_stages(ec2))["network"]
    with pytest.raises(TemporaryError):
        await stage.run(context("network", command))
    result = await stage.run(context("network", command))
    assert isinstance(result, Submitted)
    assert ec2.calls["allocate_address"] == 1 and ec2.calls["create_vpc"] == 1
    assert ec2.calls["create_subnet"] == 4 and ec2.calls["create_nat_gateway"] == 1


async def test_a_failed_nat_gateway_fails_the_stage_with_the_reason() -> None:
    ec2 = FakeEc2()
    command = create_command("llm")
    stage = by_name(network.create_stages(ec2))["network"]
    submitted = await stage.run(context("network", command))
    assert isinstance(submitted, Submitted) and stage.poll is not None
    ec2.set_nat_state(submitted.external_id, "failed", "Elastic IP address limit exceeded")
    with pytest.raises(PermanentError) as err:
        await stage.poll(context("network", command, None, submitted.external_id))
    assert err.value.code == "NatGatewayFailed"
    assert "Elastic IP address limit exceeded" in err.value.message
    assert err.value.hint


async def test_a_users_vpc_and_gateway_are_used_but_not_recorded_as_created() -> None:
    ec2 = FakeEc2()
    vpc = await ec2.create_vpc("10.50.0.0/16", {"owner": "netops"})
    gateway = await ec2.create_internet_gateway({"owner": "netops"})
    await ec2.attach_internet_gateway(gateway, vpc.vpc_id)
    theirs = ec2.add_subnet(vpc.vpc_id, "10.50.255.0/24", "use1-az2", {})
    command = create_command("llm", network={"vpc_id": vpc.vpc_id})
    outputs = await build(ec2, command)
    net = outputs["network"]
    assert net["vpc_id"] == vpc.vpc_id and net["internet_gateway_id"] == gateway
    assert net["created_vpc"] is False
    assert net["created"]["vpc"] == [] and net["created"]["internet_gateways"] == []
    assert theirs.subnet_id not in net["created"]["subnets"]
    cidrs = [ec2.subnet_map[s].cidr for s in net["created"]["subnets"]]
    assert "10.50.255.0/24" not in cidrs

    delete = delete_command("llm", outputs)
    for stage in network.delete_stages(ec2):
        await drive(stage, delete)
    assert vpc.vpc_id in ec2.vpcs and gateway in ec2.gateways
    assert set(ec2.subnet_map) == {theirs.subnet_id}


async def test_security_group_gets_efa_self_rules_both_ways_and_is_level_triggered() -> None:
    ec2 = FakeEc2()
    outputs = await build(ec2, create_command("llm"))
    group = ec2.groups[outputs["security_group"]["security_group_id"]]
    assert Rule("-1", group_id=group.group_id) in group.ingress
    assert Rule("-1", group_id=group.group_id) in group.egress
    assert Rule("-1", cidr="0.0.0.0/0") in group.egress
    assert outputs["security_group"]["created"] is True

    stage = by_name(network.create_stages(ec2))["security_group"]
    again = await drive(stage, create_command("llm"), outputs)
    assert again.noop and ec2.calls["create_security_group"] == 1


async def test_a_same_named_group_hyperpilot_did_not_make_is_refused() -> None:
    ec2 = FakeEc2()
    outputs = await build(ec2, create_command("llm"))
    vpc_id = outputs["network"]["vpc_id"]
    ec2.groups.clear()
    await ec2.create_security_group(vpc_id, "hyperpilot-llm", "theirs", {"owner": "x"})
    stage = by_name(network.create_stages(ec2))["security_group"]
    with pytest.raises(PermanentError) as err:
        await drive(stage, create_command("llm"), outputs)
    assert err.value.code == "SecurityGroupNameTaken"


async def test_compute_subnets_cover_every_zone_of_the_groups_and_route_through_the_nat() -> None:
    ec2 = FakeEc2()
    groups = [
        {"name": "a", "instance_type": "ml.p5.48xlarge", "count": 1},
        {
            "name": "b",
            "instance_type": "ml.g5.8xlarge",
            "count": 1,
            "availability_zone_id": "use1-az4",
        },
    ]
    command = create_command("llm", instance_groups=groups)
    outputs = await build(ec2, command)
    compute = outputs["compute_subnet"]
    assert set(compute["subnets"]) == {"use1-az2", "use1-az4"}
    assert compute["availability_zone_id"] == "use1-az2"
    assert compute["subnet_id"] == compute["subnets"]["use1-az2"]["subnet_id"]
    assert compute["cidr"] == "10.192.0.0/20"
    assert compute["subnets"]["use1-az4"]["cidr"] == "10.192.16.0/20"
    assert sorted(compute["created"]) == sorted(s["subnet_id"] for s in compute["subnets"].values())
    private = ec2.tables[outputs["network"]["private_route_table_id"]]
    for entry in compute["subnets"].values():
        assert entry["subnet_id"] in private.associations.values()
        assert ec2.subnet_map[entry["subnet_id"]].tags["hyperpilot:subnet"] == "compute"


async def test_ensure_compute_subnet_uses_a_named_subnet_and_never_claims_it() -> None:
    ec2 = FakeEc2()
    vpc = await ec2.create_vpc("10.0.0.0/16", {})
    named = ec2.add_subnet(vpc.vpc_id, "10.0.64.0/18", "use1-az2", {})
    result = await ensure_compute_subnet(ec2, vpc.vpc_id, "use1-az2", named.subnet_id, cluster="c")
    assert result == (named.subnet_id, "10.0.64.0/18", False)
    assert ec2.calls["create_subnet"] == 0


async def test_ensure_compute_subnet_plans_again_when_another_path_took_the_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ec2 = FakeEc2()
    vpc = await ec2.create_vpc("10.0.0.0/16", {})
    original = ec2.create_subnet
    raced = {"done": False}

    async def racing(vpc_id: str, cidr: str, zone: str, tags: Any) -> Any:
        if not raced["done"]:
            raced["done"] = True
            ec2.add_subnet(vpc_id, cidr, "use1-az1", {})  # someone else's subnet lands first
        return await original(vpc_id, cidr, zone, tags)

    monkeypatch.setattr(ec2, "create_subnet", racing)
    subnet_id, cidr, created = await ensure_compute_subnet(ec2, vpc.vpc_id, "use1-az2", cluster="c")
    assert (cidr, created) == ("10.0.16.0/20", True)
    assert ec2.subnet_map[subnet_id].tags == {
        **cluster_tags("c"),
        "hyperpilot:subnet": "compute",
        "Name": "hyperpilot-c-compute-use1-az2",
    }


async def test_delete_waits_while_things_are_in_use_and_removes_only_what_was_created() -> None:
    ec2 = FakeEc2()
    ec2.hold_deleting = True
    outputs = await build(ec2, create_command("llm"))
    compute_id = outputs["compute_subnet"]["subnet_id"]
    ec2.in_use.add(compute_id)
    stages = by_name(network.delete_stages(ec2))
    delete = delete_command("llm", outputs)
    waiting = await stages["delete_compute_subnet"].run(context("delete_compute_subnet", delete))
    assert isinstance(waiting, Submitted)
    assert "still in use" in waiting.outputs["waiting_for"]
    poll = stages["delete_compute_subnet"].poll
    assert poll is not None
    own = waiting.outputs
    assert isinstance(
        await poll(context("delete_compute_subnet", delete, None, waiting.external_id, own)),
        Pending,
    )
    expired = {**own, "waiting_since": own["waiting_since"] - network.RELEASE_DEADLINE_SECONDS - 1}
    with pytest.raises(PermanentError) as err:
        await poll(context("delete_compute_subnet", delete, None, waiting.external_id, expired))
    assert err.value.code == "DependencyViolation" and err.value.hint
    ec2.in_use.clear()
    done = await poll(context("delete_compute_subnet", delete, None, waiting.external_id, own))
    assert isinstance(done, Done) and done.outputs["deleted"] == [compute_id]

    await drive(stages["delete_security_group"], delete)
    net_stage = stages["delete_network"]
    first = await net_stage.run(context("delete_network", delete))
    assert isinstance(first, Submitted) and "NAT gateway" in first.outputs["waiting_for"]
    ec2.set_nat_state(outputs["network"]["nat_gateway_id"], "deleted")
    await drive(net_stage, delete)
    assert not ec2.vpcs and not ec2.subnet_map and not ec2.gateways and not ec2.addresses
    assert not ec2.groups and not ec2.tables

    again = [await drive(s, delete) for s in network.delete_stages(ec2)]
    assert all(result.noop for result in again)


def test_delete_stage_names_and_needs_stay_inside_the_area() -> None:
    stages = network.delete_stages(FakeEc2())
    assert [s.name for s in stages] == network.delete_stage_names()
    names = set(network.delete_stage_names())
    assert all(set(s.needs) <= names for s in stages)
    create = {s.name: s.needs for s in network.create_stages(FakeEc2())}
    assert create == {
        "network": (),
        "security_group": ("network",),
        "compute_subnet": ("network",),
    }
