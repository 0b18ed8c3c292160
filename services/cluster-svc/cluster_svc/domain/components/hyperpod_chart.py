"""The HyperPod dependency chart's resiliency parts (aws/sagemaker-hyperpod-cli
`helm_chart/HyperPodHelmChart`, chart 0.1.0): the health-monitoring agent, deep health check
and job auto-restart. Rendered here as the manifests Helm would apply, into `aws-hyperpod`."""

from __future__ import annotations

from cluster_svc.domain.components.base import Component, KubeObject
from cluster_svc.domain.components.objects import (
    TOLERATE_ALL,
    cluster_role,
    cluster_role_binding,
    container,
    daemon_set,
    field_env,
    host_path,
    instance_type_affinity,
    mount,
    rule,
    service_account,
)

NAMESPACE = "aws-hyperpod"
CHART_VERSION = "0.1.0"
AGENT_IMAGE_TAG = "1.0.935.0_1.0.282.0"

# The chart's map of regions to the ECR registry that serves the agent image.
AGENT_REGISTRY_ACCOUNTS = {
    "us-east-1": "767398015722",
    "us-west-2": "905418368575",
    "us-east-2": "851725546812",
    "us-west-1": "011528288828",
    "eu-central-1": "211125453373",
    "eu-north-1": "654654141839",
    "eu-west-1": "533267293120",
    "eu-west-2": "011528288831",
    "ap-northeast-1": "533267052152",
    "ap-south-1": "011528288864",
    "ap-southeast-1": "905418428165",
    "ap-southeast-2": "851725636348",
    "sa-east-1": "025066253954",
}

_GPU_SIZES = (
    "xlarge",
    "2xlarge",
    "4xlarge",
    "8xlarge",
    "12xlarge",
    "16xlarge",
    "24xlarge",
    "48xlarge",
)
NVIDIA_INSTANCE_TYPES = [
    "ml.p5en.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5.48xlarge",
    "ml.p5.4xlarge",
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    *(f"ml.{family}.{size}" for family in ("g5", "g6", "g6e") for size in _GPU_SIZES),
    "ml.gr6.4xlarge",
    "ml.gr6.8xlarge",
    "ml.p6-b200.48xlarge",
    "ml.p6e-gb200.36xlarge",
]
NEURON_INSTANCE_TYPES = [
    "ml.inf2.xlarge",
    "ml.inf2.8xlarge",
    "ml.inf2.24xlarge",
    "ml.inf2.48xlarge",
    "ml.trn1.32xlarge",
    "ml.trn1n.32xlarge",
    "ml.trn2.3xlarge",
    "ml.trn2.48xlarge",
]


def agent_image(region: str) -> str:
    account = AGENT_REGISTRY_ACCOUNTS.get(region, AGENT_REGISTRY_ACCOUNTS["us-east-1"])
    registry_region = region if region in AGENT_REGISTRY_ACCOUNTS else "us-east-1"
    return (
        f"{account}.dkr.ecr.{registry_region}.amazonaws.com/"
        f"hyperpod-health-monitoring-agent:{AGENT_IMAGE_TAG}"
    )


def _agent(name: str, image: str, instance_types: list[str], extra: list[str]) -> KubeObject:
    env = [field_env("NODE_NAME", "spec.nodeName"), field_env("NODE_IP", "status.hostIP")]
    if extra:
        env += [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
        ]
    return daemon_set(
        name,
        NAMESPACE,
        [
            container(
                name,
                image,
                args=extra,
                env=env,
                requests={"cpu": "500m", "memory": "512Mi"},
                limits={"cpu": "500m", "memory": "512Mi"},
                mounts=[
                    mount("log", "/var/log"),
                    mount("kmsg", "/dev/kmsg", read_only=True),
                    mount("localtime", "/etc/localtime", read_only=True),
                ],
                security={"runAsUser": 1000, "runAsGroup": 2000},
            )
        ],
        account="health-monitoring-agent",
        affinity=instance_type_affinity(instance_types),
        tolerations=TOLERATE_ALL,
        volumes=[
            host_path("log", "/var/log/"),
            host_path("kmsg", "/dev/kmsg"),
            host_path("localtime", "/etc/localtime"),
        ],
    )


def health_monitoring_agent(region: str) -> Component:
    image = agent_image(region)
    return Component(
        name="health-monitoring-agent",
        kind="manifests",
        version=CHART_VERSION,
        namespace=NAMESPACE,
        requires=("namespaces",),
        manifests=(
            cluster_role(
                "health-monitoring-agent",
                [
                    rule([""], ["nodes"], ["get"]),
                    rule([""], ["nodes", "nodes/status"], ["patch"]),
                    rule(["", "events.k8s.io"], ["events"], ["create", "patch", "update"]),
                ],
            ),
            service_account("health-monitoring-agent", NAMESPACE),
            cluster_role_binding(
                "health-monitoring-agent",
                "health-monitoring-agent",
                "health-monitoring-agent",
                NAMESPACE,
            ),
            _agent("health-monitoring-agent", image, NVIDIA_INSTANCE_TYPES, []),
            _agent(
                "health-monitoring-agent-non-nvidia",
                image,
                NEURON_INSTANCE_TYPES,
                [
                    "--enable-k8s-exporter=false",
                    "--config.system-log-monitor=/config/system-message-monitor.json",
                ],
            ),
        ),
    )


def deep_health_check() -> Component:
    account = "deep-health-check-service-account"
    role = f"{account}-role"
    return Component(
        name="deep-health-check",
        kind="manifests",
        version=CHART_VERSION,
        namespace=NAMESPACE,
        requires=("namespaces",),
        manifests=(
            service_account(account, NAMESPACE),
            cluster_role(
                role,
                [
                    rule([""], ["nodes"], ["get", "list"]),
                    rule([""], ["pods"], ["get", "list", "patch"]),
                ],
            ),
            cluster_role_binding(f"{role}-binding", role, account, NAMESPACE),
        ),
    )


def job_auto_restart() -> Component:
    """RBAC for HyperPod's service-linked role, which restarts jobs on faulty nodes."""
    return Component(
        name="job-auto-restart",
        kind="manifests",
        version=CHART_VERSION,
        namespace=NAMESPACE,
        requires=("namespaces",),
        manifests=(
            cluster_role(
                "job-auto-restart",
                [
                    rule(
                        [""],
                        ["nodes", "nodes/status", "pods", "pods/status"],
                        ["get", "list", "watch"],
                    ),
                    rule([""], ["pods"], ["delete", "deletecollection"]),
                    rule([""], ["nodes", "nodes/status"], ["patch"]),
                    rule(["", "events.k8s.io"], ["events"], ["create"]),
                    rule(
                        ["kubeflow.org"],
                        ["pytorchjobs", "pytorchjobs/status"],
                        ["get", "list", "watch", "delete", "patch", "update"],
                    ),
                    rule(
                        ["coordination.k8s.io"], ["leases"], ["get", "create", "update", "delete"]
                    ),
                ],
            ),
            service_account("job-auto-restart", NAMESPACE),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "job-auto-restart"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "job-auto-restart",
                },
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "User",
                        "name": "hyperpod-service-linked-role",
                    }
                ],
            },
        ),
    )
