"""pytest helpers for suites that run against the simulated AWS.

In a conftest.py:

    from sim.testing import simulated_aws
    sim_aws = simulated_aws(profile="fast")    # a session-scoped fixture named sim_aws

and in a test:

    from sim.testing import aws_client, call_log, inject_fault, wait_for

    def test_x(sim_aws):
        eks = aws_client(sim_aws, "eks")
        with inject_fault(sim_aws, "throttle", service="eks", operation="CreateCluster"):
            ...
        assert len(call_log(sim_aws, "eks", "CreateCluster")) == 1

`simulated_aws(set_env=True)` (the default) also points the process's boto3 at it through
AWS_ENDPOINT_URL and test credentials while the fixture lives. Every helper taking a `target`
accepts a SimulatedAws (in-process) or an endpoint URL (another process, through the admin API
under /_sim/).
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import boto3
import pytest

from sim.aws import SimulatedAws
from sim.interfaces import KubeHooks
from sim.profile import TimeProfile, get_profile

T = TypeVar("T")

TEST_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def aws_env(target: SimulatedAws | str) -> dict[str, str]:
    """The environment a domain service needs to use the simulated AWS: endpoint + credentials."""
    url = target.endpoint_url if isinstance(target, SimulatedAws) else target
    region = target.region if isinstance(target, SimulatedAws) else "us-east-1"
    return {**TEST_CREDENTIALS, "AWS_DEFAULT_REGION": region, "AWS_ENDPOINT_URL": url}


def aws_client(target: SimulatedAws | str, service: str, **kwargs: Any) -> Any:
    """A plain boto3 client pointed at the simulated AWS."""
    env = aws_env(target)
    return boto3.client(
        service,
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=env["AWS_DEFAULT_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        **kwargs,
    )


def simulated_aws(
    profile: TimeProfile | str = "fast",
    *,
    kube: KubeHooks | None = None,
    account_id: str = "123456789012",
    scope: str = "session",
    set_env: bool = True,
    regions: tuple[str, ...] = (),
) -> Any:
    """A pytest fixture yielding a started SimulatedAws; with `set_env`, the process environment
    points boto3 at it (AWS_ENDPOINT_URL and test credentials) for the fixture's lifetime."""

    @pytest.fixture(scope=scope)  # type: ignore[call-overload, untyped-decorator]
    def fixture() -> Iterator[SimulatedAws]:
        timing = get_profile(profile) if isinstance(profile, str) else profile
        sim = SimulatedAws(timing, kube=kube, account_id=account_id, regions=regions).start()
        saved = {key: os.environ.get(key) for key in aws_env(sim)}
        if set_env:
            os.environ.update(aws_env(sim))
        try:
            yield sim
        finally:
            sim.stop()
            if set_env:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value

    return fixture


class AdminClient:
    """The admin API of a simulated AWS running in another process."""

    def __init__(self, endpoint_url: str) -> None:
        self.base = endpoint_url.rstrip("/") + "/_sim"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/health")
        return result

    def calls(
        self, service: str | None = None, operation: str | None = None
    ) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode(
            {k: v for k, v in (("service", service), ("operation", operation)) if v}
        )
        result: list[dict[str, Any]] = self._call("GET", "/calls" + (f"?{query}" if query else ""))[
            "calls"
        ]
        return result

    def inventory(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = self._call("GET", "/inventory")
        return result

    def inject_fault(self, kind: str, **options: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/faults", {"kind": kind, **options})
        return result

    def faults(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/faults")["faults"]
        return result

    def clear_faults(self, fault_id: str | None = None) -> None:
        self._call("DELETE", f"/faults/{fault_id}" if fault_id else "/faults")

    def account(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/account")
        return result

    def update_account(self, changes: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("PUT", "/account", changes)
        return result


@contextmanager
def inject_fault(target: SimulatedAws | str, kind: str, **options: Any) -> Iterator[dict[str, Any]]:
    """Arm a fault for the duration of a `with` block (immediate faults just happen)."""
    if isinstance(target, SimulatedAws):
        fault = target.faults.inject(kind, **options).as_dict()
        try:
            yield fault
        finally:
            target.faults.clear(fault["id"])
    else:
        admin = AdminClient(target)
        fault = admin.inject_fault(kind, **options)
        try:
            yield fault
        finally:
            admin.clear_faults(fault["id"])


def call_log(
    target: SimulatedAws | str, service: str | None = None, operation: str | None = None
) -> list[dict[str, Any]]:
    """Mutating calls seen by the simulated AWS (in-process or over HTTP)."""
    if isinstance(target, SimulatedAws):
        return target.call_log(service, operation)
    return AdminClient(target).calls(service, operation)


def inventory(target: SimulatedAws | str) -> dict[str, list[str]]:
    """What exists in the simulated account, by kind."""
    if isinstance(target, SimulatedAws):
        return target.inventory()
    return AdminClient(target).inventory()


def wait_for(probe: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.05) -> T:
    """Poll `probe` until it returns something truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s")
        time.sleep(interval)


def hyperpod_clusters(
    target: SimulatedAws | str,
    sizes: dict[str, int],
    *,
    instance_type: str = "ml.g5.2xlarge",
    cidr: str = "10.70",
    timeout: float = 60.0,
) -> dict[str, tuple[str, dict[str, Any]]]:
    """HyperPod clusters of `sizes` (name -> node count), each on its own ACTIVE EKS cluster of
    the same name, made with boto3 as a caller would: one VPC with two subnets, a security
    group and a role for all. Returns name -> (HyperPod ARN, the EKS cluster as described)."""
    ec2, iam, eks, sm = (aws_client(target, s) for s in ("ec2", "iam", "eks", "sagemaker"))
    tag = next(iter(sizes))
    vpc = ec2.create_vpc(CidrBlock=f"{cidr}.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"{cidr}.{i * 16}.0/20", AvailabilityZoneId=zone)[
            "Subnet"
        ]["SubnetId"]
        for i, zone in enumerate(("use1-az2", "use1-az4"))
    ]
    group = ec2.create_security_group(GroupName=f"g-{tag}", Description="g", VpcId=vpc)["GroupId"]
    role = iam.create_role(RoleName=f"r-{tag}", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    if isinstance(target, SimulatedAws):
        target.account.set_quota("sagemaker", f"{instance_type} for cluster usage", 10_000)
    for name in sizes:
        eks.create_cluster(
            name=name,
            roleArn=role,
            resourcesVpcConfig={"subnetIds": subnets},
            accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
        )
    made: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, count in sizes.items():

        def active(n: str = name) -> dict[str, Any] | None:
            found: dict[str, Any] = eks.describe_cluster(name=n)["cluster"]
            return found if found["status"] == "ACTIVE" else None

        cluster = wait_for(active, timeout=timeout)
        arn = sm.create_cluster(
            ClusterName=name,
            InstanceGroups=[
                {
                    "InstanceGroupName": "gpu",
                    "InstanceType": instance_type,
                    "InstanceCount": count,
                    "ExecutionRole": role,
                    "LifeCycleConfig": {"SourceS3Uri": "s3://b/l", "OnCreate": "on_create.sh"},
                }
            ],
            VpcConfig={"Subnets": subnets[:1], "SecurityGroupIds": [group]},
            Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
            NodeRecovery="None",
        )["ClusterArn"]
        made[name] = (arn, cluster)
    for arn, _ in made.values():

        def in_service(a: str = arn) -> bool:
            return bool(sm.describe_cluster(ClusterName=a)["ClusterStatus"] == "InService")

        wait_for(in_service, timeout=timeout * 2)
    return made
