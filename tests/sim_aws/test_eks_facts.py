"""One source of facts: the Kubernetes API server of a simulated EKS cluster reports what EKS
says about the cluster. Driven with boto3 on the EKS side, kubectl and the official client on
the Kubernetes side: /version against DescribeCluster's version (and after UpdateClusterVersion),
the `kubernetes` Service against serviceIpv4Cidr, the nodes against ListNodegroups and
DescribeNodegroup (none without node groups, then joining, relabelled, scaled and removed with
them)."""

from __future__ import annotations

import base64
import ipaddress
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld, make_token
from sim.profile import get_profile
from sim.testing import aws_client, wait_for

KUBECTL = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "kubectl")
NODEGROUP = "eks.amazonaws.com/nodegroup"


@pytest.fixture(scope="module")
def world() -> Iterator[SimulatedAws]:
    profile = get_profile("fast")
    kube = KubeWorld(profile)
    aws = SimulatedAws(profile, kube=kube, account_id="444455556666").start()
    yield aws
    aws.stop()
    kube.close()


def _network(sim: SimulatedAws, vpc_cidr: str) -> tuple[list[str], str]:
    """Two subnets in two zones of a new VPC, and a role: (subnet ids, role ARN)."""
    ec2, iam = aws_client(sim, "ec2"), aws_client(sim, "iam")
    vpc = ec2.create_vpc(CidrBlock=vpc_cidr)["Vpc"]["VpcId"]
    block = ipaddress.ip_network(vpc_cidr)
    halves = list(block.subnets(prefixlen_diff=1))
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=str(half), AvailabilityZoneId=zone)["Subnet"][
            "SubnetId"
        ]
        for half, zone in zip(halves, ("use1-az1", "use1-az2"), strict=True)
    ]
    role = iam.create_role(RoleName=f"facts-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument="{}")[
        "Role"
    ]["Arn"]
    return subnets, role


def _eks(sim: SimulatedAws, vpc_cidr: str, **extra: Any) -> tuple[dict[str, Any], list[str], str]:
    """An ACTIVE EKS cluster: (DescribeCluster's cluster, its subnets, the role)."""
    eks = aws_client(sim, "eks")
    subnets, role = _network(sim, vpc_cidr)
    name = f"facts-{uuid.uuid4().hex[:8]}"
    eks.create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": subnets},
        accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
        **extra,
    )
    cluster = wait_for(
        lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c,
        timeout=15,
    )
    return cluster, subnets, role


def _kubeconfig(cluster: dict[str, Any], tmp_path: Path) -> Path:
    """A kubeconfig as a user builds it from DescribeCluster (endpoint, CA, an EKS token)."""
    name = cluster["arn"]
    path = tmp_path / f"{cluster['name']}.kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": name,
                        "cluster": {
                            "server": cluster["endpoint"],
                            "certificate-authority-data": cluster["certificateAuthority"]["data"],
                        },
                    }
                ],
                "users": [{"name": name, "user": {"token": make_token(cluster["name"])}}],
                "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
                "current-context": name,
            }
        )
    )
    assert base64.b64decode(cluster["certificateAuthority"]["data"]).startswith(b"-----BEGIN")
    return path


def _kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _nodes(kubeconfig: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(_kubectl(kubeconfig, "get", "nodes", "-o", "json"))[
        "items"
    ]
    return items


def _wait_nodes(kubeconfig: Path, count: int) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []

    def counted() -> bool:
        nodes[:] = _nodes(kubeconfig)
        return len(nodes) == count

    wait_for(counted, timeout=10)
    return nodes


def _server_version(kubeconfig: Path) -> str:
    version: str = json.loads(_kubectl(kubeconfig, "version", "-o", "json"))["serverVersion"][
        "gitVersion"
    ]
    return version


def test_version_and_service_ip_follow_describe_cluster(
    world: SimulatedAws, tmp_path: Path
) -> None:
    eks = aws_client(world, "eks")
    # a VPC in 10.0.0.0/8 and no serviceIpv4Cidr: EKS takes 172.20.0.0/16
    cluster, _, _ = _eks(world, "10.60.0.0/16", version="1.32")
    assert cluster["kubernetesNetworkConfig"]["serviceIpv4Cidr"] == "172.20.0.0/16"
    kubeconfig = _kubeconfig(cluster, tmp_path)
    assert _server_version(kubeconfig).startswith("v1.32.")
    api = config.new_client_from_config_dict(yaml.safe_load(kubeconfig.read_text()))  # type: ignore[no-untyped-call]
    try:
        info = client.VersionApi(api).get_code()
        assert (info.major, info.minor) == ("1", "32")
        spec = client.CoreV1Api(api).read_namespaced_service("kubernetes", "default").spec
        assert spec is not None and spec.cluster_ip is not None
    finally:
        api.close()
    cidr = ipaddress.ip_network(cluster["kubernetesNetworkConfig"]["serviceIpv4Cidr"])
    assert ipaddress.ip_address(spec.cluster_ip) == next(cidr.hosts())  # its first address

    # the control plane upgraded by UpdateClusterVersion reports its new version
    update = eks.update_cluster_version(name=cluster["name"], version="1.33")["update"]
    wait_for(
        lambda: (
            eks.describe_update(name=cluster["name"], updateId=update["id"])["update"]["status"]
            == "Successful"
        ),
        timeout=15,
    )
    assert eks.describe_cluster(name=cluster["name"])["cluster"]["version"] == "1.33"
    wait_for(lambda: _server_version(kubeconfig).startswith("v1.33."), timeout=10)


def test_service_ip_of_a_named_block_and_of_a_vpc_outside_ten(
    world: SimulatedAws, tmp_path: Path
) -> None:
    named, _, _ = _eks(
        world, "10.61.0.0/16", kubernetesNetworkConfig={"serviceIpv4Cidr": "10.150.0.0/16"}
    )
    assert named["kubernetesNetworkConfig"]["serviceIpv4Cidr"] == "10.150.0.0/16"
    # a VPC outside 10.0.0.0/8: EKS takes 10.100.0.0/16
    other, _, _ = _eks(world, "192.168.0.0/16")
    assert other["kubernetesNetworkConfig"]["serviceIpv4Cidr"] == "10.100.0.0/16"
    for cluster, first in ((named, "10.150.0.1"), (other, "10.100.0.1")):
        kubeconfig = _kubeconfig(cluster, tmp_path)
        out = _kubectl(kubeconfig, "get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
        assert out == first


def test_nodes_are_the_node_groups_nodes(world: SimulatedAws, tmp_path: Path) -> None:
    eks = aws_client(world, "eks")
    cluster, subnets, role = _eks(world, "10.62.0.0/16")
    name = cluster["name"]
    kubeconfig = _kubeconfig(cluster, tmp_path)

    # no node group: no node, and CoreDNS waits for one, as on EKS
    assert eks.list_nodegroups(clusterName=name)["nodegroups"] == []
    assert _nodes(kubeconfig) == []

    def coredns_pods() -> list[dict[str, Any]]:
        out = _kubectl(
            kubeconfig, "get", "pods", "-n", "kube-system", "-l", "k8s-app=coredns", "-o", "json"
        )
        pods: list[dict[str, Any]] = json.loads(out)["items"]
        return pods

    wait_for(lambda: len(coredns_pods()) == 2, timeout=10)
    assert all(p["status"]["phase"] == "Pending" for p in coredns_pods())
    wait_for(
        lambda: (
            "no nodes available to schedule pods"
            in _kubectl(
                kubeconfig,
                "get",
                "events",
                "-n",
                "kube-system",
                "--field-selector",
                "reason=FailedScheduling",
            )
        ),
        timeout=10,
    )

    # a node group joins: its nodes, as DescribeNodegroup describes them
    eks.create_nodegroup(
        clusterName=name,
        nodegroupName="system",
        nodeRole=role,
        subnets=subnets,
        instanceTypes=["m5.large"],
        scalingConfig={"minSize": 1, "maxSize": 4, "desiredSize": 2},
        labels={"role": "system"},
        taints=[{"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}],
    )

    def described() -> dict[str, Any]:
        group: dict[str, Any] = eks.describe_nodegroup(clusterName=name, nodegroupName="system")[
            "nodegroup"
        ]
        return group

    wait_for(lambda: described()["status"] == "ACTIVE", timeout=10)
    assert eks.list_nodegroups(clusterName=name)["nodegroups"] == ["system"]
    subnet_zones = {
        s["AvailabilityZone"]: s["CidrBlock"]
        for s in aws_client(world, "ec2").describe_subnets(SubnetIds=subnets)["Subnets"]
    }
    nodes = _wait_nodes(kubeconfig, 2)
    group = described()
    for node in nodes:
        labels = node["metadata"]["labels"]
        assert labels[NODEGROUP] == "system"
        assert labels["eks.amazonaws.com/capacityType"] == group["capacityType"]
        assert labels["node.kubernetes.io/instance-type"] == group["instanceTypes"][0]
        assert labels["role"] == "system"
        assert {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"} in node[
            "spec"
        ]["taints"]
        assert node["status"]["nodeInfo"]["kubeletVersion"].startswith(f"v{group['version']}.")
        address = {a["type"]: a["address"] for a in node["status"]["addresses"]}["InternalIP"]
        assert node["metadata"]["name"] == f"ip-{address.replace('.', '-')}.ec2.internal"
        # the node is in one of its group's subnets: its zone and its address agree with EC2
        zone = labels["topology.kubernetes.io/zone"]
        assert zone in subnet_zones
        assert ipaddress.ip_address(address) in ipaddress.ip_network(subnet_zones[zone])
        assert node["spec"]["providerID"].startswith(f"aws:///{zone}/i-")
    # two nodes over two subnets in two zones: one in each (EKS balances a group's zones)
    assert {n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes} == set(
        subnet_zones
    )
    # CoreDNS tolerates CriticalAddonsOnly: it runs once the nodes are there
    wait_for(lambda: all(p["status"]["phase"] == "Running" for p in coredns_pods()), timeout=15)
    assert {p["spec"]["nodeName"] for p in coredns_pods()} <= {n["metadata"]["name"] for n in nodes}

    # UpdateNodegroupConfig: scaled out and relabelled
    eks.update_nodegroup_config(
        clusterName=name,
        nodegroupName="system",
        scalingConfig={"desiredSize": 3},
        labels={"addOrUpdateLabels": {"tier": "core"}, "removeLabels": ["role"]},
    )
    wait_for(lambda: described()["scalingConfig"]["desiredSize"] == 3, timeout=10)
    three = _wait_nodes(kubeconfig, 3)
    for node in three:
        assert node["metadata"]["labels"]["tier"] == "core"
        assert "role" not in node["metadata"]["labels"]
    names = sorted(n["metadata"]["name"] for n in three)

    # scaled in: the newest node goes
    eks.update_nodegroup_config(
        clusterName=name, nodegroupName="system", scalingConfig={"desiredSize": 1}
    )
    one = _wait_nodes(kubeconfig, 1)
    assert one[0]["metadata"]["name"] in names

    # deleted: its nodes go with it
    eks.delete_nodegroup(clusterName=name, nodegroupName="system")
    wait_for(lambda: eks.list_nodegroups(clusterName=name)["nodegroups"] == [], timeout=10)
    wait_for(lambda: _nodes(kubeconfig) == [], timeout=10)
    out = _kubectl(kubeconfig, "get", "nodes", "-l", f"{NODEGROUP}=system", "-o", "name")
    assert out == ""
