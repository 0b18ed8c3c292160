"""The read-only inspection of an EKS cluster for adoption: what it has, what HyperPod still
needs, and what stops an adoption (each blocker on its field, with its rule and a way out)."""

from __future__ import annotations

from dataclasses import replace

from cluster_svc.domain.adoption import AddonView, EksView, NodegroupView, assess
from cluster_svc.domain.network import RouteTable

CALLER = "arn:aws:iam::123456789012:user/admin"
VIEW = EksView(
    name="team-eks",
    arn="arn:aws:eks:us-east-1:123456789012:cluster/team-eks",
    status="ACTIVE",
    version="1.32",
    vpc_id="vpc-0123456789abcdef0",
    subnet_ids=("subnet-a", "subnet-b"),
    security_group_ids=(),
    cluster_security_group_id="sg-1",
    authentication_mode="CONFIG_MAP",
    endpoint="https://example",
    ca_data="Y2E=",
    oidc_issuer="https://oidc.eks.us-east-1.amazonaws.com/id/ABC",
)
PUBLIC = RouteTable("rtb-public", VIEW.vpc_id, {"0.0.0.0/0": "igw-1"}, {"a": "subnet-a"})
PRIVATE = RouteTable("rtb-private", VIEW.vpc_id, {"0.0.0.0/0": "nat-1"}, {"b": "subnet-b"})


def _assess(view: EksView = VIEW, **overrides: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {
        "nodegroups": [NodegroupView("system", "ACTIVE", ("t3.medium",), 2)],
        "addons": [AddonView("vpc-cni", "v1.20.0-eksbuild.1", "ACTIVE", False)],
        "entries": [],
        "hyperpod_clusters": [],
        "oidc_registered": False,
        "route_tables": [PUBLIC, PRIVATE],
        "caller": CALLER,
        "declared_addons": ["cert-manager", "vpc-cni"],
        **overrides,
    }
    return assess(view, **args)  # type: ignore[arg-type]


def test_an_adoptable_cluster_lists_what_it_has_and_what_is_missing() -> None:
    found = _assess()
    out = found.to_json()
    assert out["adoptable"] is True and out["blockers"] == []
    assert out["private_route_table_id"] == "rtb-private"  # the NAT-routed one, not the public
    assert out["nodegroups"][0]["name"] == "system" and out["addons"][0]["name"] == "vpc-cni"
    stages = [m["stage"] for m in out["missing"]]
    assert stages[0] == "authentication_mode"  # CONFIG_MAP: HyperPod cannot add access entries
    assert "oidc_provider" in stages
    adds = " ".join(m["adds"] for m in out["missing"])
    assert "EKS add-on cert-manager" in adds and "vpc-cni" not in adds  # present is not missing


def test_nothing_is_missing_that_is_there() -> None:
    view = replace(VIEW, authentication_mode="API_AND_CONFIG_MAP")
    found = _assess(view, oidc_registered=True, entries=[CALLER])
    stages = [m["stage"] for m in found.missing]
    assert "authentication_mode" not in stages and "oidc_provider" not in stages
    assert not any(CALLER in m["adds"] for m in found.missing)


def test_each_blocker_names_its_rule_and_what_to_do() -> None:
    view = replace(VIEW, status="UPDATING", version="1.28")
    found = _assess(view, hyperpod_clusters=["existing-hp"], route_tables=[PUBLIC, None])
    rules = {p.rule: p for p in found.blockers}
    assert set(rules) == {
        "eks_cluster_active",
        "kubernetes_version_supported",
        "one_hyperpod_cluster_per_eks_cluster",
        "private_subnet_with_nat",
    }
    assert all(p.field == "eks_cluster_name" and p.hint for p in found.blockers)
    assert "import it instead" in rules["one_hyperpod_cluster_per_eks_cluster"].hint
    assert "subnet-a" in rules["private_subnet_with_nat"].hint
    assert found.to_json()["adoptable"] is False
