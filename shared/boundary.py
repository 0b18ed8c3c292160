"""The one way a user's value reaches the outside world: a Kubernetes object name, a label, a
URL path, a shell line.

Every function here either returns a value that is safe where it goes or raises RuleViolation
naming the field, the rule and what to do instead. Nothing else in the project joins user values
into names, paths or command lines (`tests/unit/test_boundary_scan.py` checks that routes, tools
and renderers build none from an f-string).

Rules, from the Kubernetes API conventions ("Object Names and IDs",
https://kubernetes.io/docs/concepts/overview/working-with-objects/names/) and the label syntax
(https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set):
- a DNS-1123 label: at most 63 lowercase alphanumerics or '-', starting and ending alphanumeric
  (namespaces, Services, most names that become a DNS name);
- a DNS-1123 subdomain: at most 253, labels joined by '.' (pods, Secrets, ConfigMaps);
- a label value: at most 63, alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote
from uuid import UUID

from shared.validation import RuleViolation

DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
# Each dot-separated label starts and ends alphanumeric (Kubernetes refuses "a-.b" and "a.-b";
# k8s.io/apimachinery validation.IsDNS1123Subdomain); the length (<= 253) is checked apart.
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_VALUE_PATTERN = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
# A Hugging Face model id (`org/name`) or a plain served-model name, as vLLM and SGLang accept
# them in an OpenAI request's `model`: no '..', no '\', no '%', no scheme.
MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95})?$"

_DNS_LABEL = re.compile(DNS_LABEL_PATTERN)
_DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN_PATTERN)
_LABEL_VALUE = re.compile(LABEL_VALUE_PATTERN)
_MODEL_ID = re.compile(MODEL_ID_PATTERN)

# Namespaces no user workload goes into: Kubernetes' own (kube-system, kube-public,
# kube-node-lease and any kube-*), and those the operators and add-ons the control plane
# installs run in, as cluster-svc's components and the EKS add-ons they ask for put them there
# (and the Kubernetes emulator installs them): aws-hyperpod (the HyperPod Helm chart, its health
# agent and the training operator add-on), hyperpod-inference-system (the inference operator),
# hyperpod-observability, kubeflow (the training operator), mpi-operator, kueue-system (task
# governance), ray-system and kuberay (KubeRay), keda, cert-manager and amazon-cloudwatch.
# (`hyperpod`, which cluster-svc also creates, is where HyperPod workloads go: not reserved.)
RESERVED_NAMESPACE_PREFIXES = ("kube-",)
RESERVED_NAMESPACES = frozenset(
    {
        "kube-system", "kube-public", "kube-node-lease", "aws-hyperpod",
        "hyperpod-inference-system", "hyperpod-observability", "kubeflow", "mpi-operator",
        "kueue-system", "ray-system", "kuberay", "keda", "cert-manager", "amazon-cloudwatch",
    }
)  # fmt: skip
NAMESPACE_RULE = (
    "user workloads go only into namespaces the control plane manages: not kube-system, any"
    " kube-* namespace, or an operator's namespace (" + ", ".join(sorted(RESERVED_NAMESPACES)) + ")"
)


def _refuse(field: str, value: str, rule: str, hint: str) -> RuleViolation:
    shown = value if len(value) <= 80 else value[:77] + "..."
    return RuleViolation(f"{field} {shown!r} {rule}", hint)


def dns_label(value: str, field: str) -> str:
    """`value` if it is a DNS-1123 label (a namespace, a Service's name)."""
    if not _DNS_LABEL.match(value):
        raise _refuse(
            field,
            value,
            "is not a DNS-1123 label",
            "use at most 63 lowercase letters, digits and '-', starting and ending with a letter"
            " or digit",
        )
    return value


def dns_subdomain(value: str, field: str) -> str:
    """`value` if it is a DNS-1123 subdomain (a pod's or a Secret's name)."""
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise _refuse(
            field,
            value,
            "is not a DNS-1123 subdomain",
            "use at most 253 lowercase letters, digits, '-' and '.', starting and ending with a"
            " letter or digit",
        )
    return value


def label_value(value: str, field: str) -> str:
    """`value` if it is a valid Kubernetes label value."""
    if not _LABEL_VALUE.match(value):
        raise _refuse(
            field,
            value,
            "is not a valid label value",
            "use at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter"
            " or digit",
        )
    return value


def object_name(*parts: str, field: str) -> str:
    """A DNS-1123 label made of `parts` joined by '-' (an endpoint's per-model Service, say):
    every part is checked, and so is the whole."""
    for part in parts:
        if not part or not re.fullmatch(r"[a-z0-9-]+", part):
            raise _refuse(
                field,
                part,
                "cannot be part of a Kubernetes name",
                "use lowercase letters, digits and '-' only",
            )
    return dns_label("-".join(parts), field)


# SQS: "A queue name can have up to 80 characters. Valid values: alphanumeric characters,
# hyphens (-), and underscores (_)" (CreateQueue, QueueName); EventBridge: a rule's name is
# 1 to 64 of [.-_A-Za-z0-9] (PutRule, Name).
_SQS_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_EVENT_RULE_NAME = re.compile(r"^[.\-_A-Za-z0-9]{1,64}$")


def sqs_queue_name(*parts: str, field: str = "queue") -> str:
    """An SQS queue's name made of `parts` joined by '-', checked against SQS's rule."""
    name = "-".join(parts)
    if not all(parts) or not _SQS_QUEUE_NAME.match(name):
        raise _refuse(
            field,
            name,
            "is not a valid SQS queue name",
            "use at most 80 letters, digits, '-' and '_'",
        )
    return name


def event_rule_name(*parts: str, field: str = "rule") -> str:
    """An EventBridge rule's name made of `parts` joined by '-', checked against its rule."""
    name = "-".join(parts)
    if not all(parts) or not _EVENT_RULE_NAME.match(name):
        raise _refuse(
            field,
            name,
            "is not a valid EventBridge rule name",
            "use at most 64 letters, digits, '.', '-' and '_'",
        )
    return name


def model_id(value: str, field: str) -> str:
    """`value` if it is a model id (`org/name` or `name`) that is safe in a path or a label."""
    if not _MODEL_ID.match(value) or ".." in value:
        raise _refuse(
            field,
            value,
            "is not a model id",
            "use a Hugging Face id such as Qwen/Qwen3-0.6B or a served name such as qwen3:"
            " letters, digits, '-', '_' and '.', with at most one '/'",
        )
    return value


def namespace(value: str, field: str = "namespace") -> str:
    """`value` if it is a DNS-1123 label and a namespace user workloads may go into."""
    dns_label(value, field)
    if value in RESERVED_NAMESPACES or value.startswith(RESERVED_NAMESPACE_PREFIXES):
        raise _refuse(field, value, "is reserved", NAMESPACE_RULE)
    return value


# Task governance's names, as SageMaker and its add-on make them: a team is a compute quota's
# ComputeQuotaTarget.TeamName and a priority class a SchedulerConfig.PriorityClasses[].Name, both
# `[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?` (botocore's sagemaker model); the add-on makes the team's
# namespace `hyperpod-ns-<team>` with the LocalQueue `hyperpod-ns-<team>-localqueue`, and one
# WorkloadPriorityClass `<class>-priority` per priority class, which a workload names in the labels
# `kueue.x-k8s.io/queue-name` and `kueue.x-k8s.io/priority-class`
# (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-tasks.html).
GOVERNED_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$"
_GOVERNED_NAME = re.compile(GOVERNED_NAME_PATTERN)
TEAM_NAMESPACE_PREFIX = "hyperpod-ns-"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def team_name(value: str, field: str = "team") -> str:
    """`value` if it is a task-governance team name (a compute quota's TeamName)."""
    if not _GOVERNED_NAME.match(value):
        raise _refuse(
            field,
            value,
            "is not a team name",
            "use at most 40 lowercase letters, digits and '-', starting and ending with a letter"
            " or digit (the team's namespace is hyperpod-ns-<team>)",
        )
    return value


def priority_class_name(value: str, field: str = "priority") -> str:
    """`value` if it is a task-governance priority class name."""
    if not _GOVERNED_NAME.match(value):
        raise _refuse(
            field,
            value,
            "is not a priority class name",
            "use at most 40 lowercase letters, digits and '-', starting and ending with a letter"
            " or digit, as the cluster's scheduler config names it",
        )
    return value


def team_namespace(team: str) -> str:
    """The namespace task governance makes for a team, and its workloads go into."""
    return TEAM_NAMESPACE_PREFIX + team_name(team)


def team_queue(team: str) -> str:
    """The team's Kueue LocalQueue (in the team's namespace)."""
    return team_namespace(team) + "-localqueue"


def priority_class_object(priority: str) -> str:
    """The WorkloadPriorityClass task governance makes for a priority class."""
    return priority_class_name(priority) + "-priority"


def path_segment(value: str, field: str) -> str:
    """One URL path segment, percent-encoded: never '.', '..' or empty, so it cannot climb."""
    if value in ("", ".", "..") or "\\" in value or "\x00" in value:
        raise _refuse(field, value, "cannot be a URL path segment", "use a plain name")
    return quote(value, safe=":@-._~")


def url_path(*segments: str | int | UUID) -> str:
    """An absolute URL path of already-checked segments, each percent-encoded on its own."""
    return "/" + "/".join(path_segment(str(s), "path") for s in segments)


def api_path(*segments: str | int | UUID) -> str:
    """A path of Hyperpilot's REST API (`/api/v1/...`), each segment encoded on its own: what
    the MCP tools, the CLI and the gateway's own links call."""
    return url_path("api", "v1", *segments)


def confined_subpath(value: str, allowed: Iterable[str], field: str = "path") -> str:
    """`value` normalized (decoded once, '.' and '..' resolved) and kept only when it is one
    of `allowed` or below one of them; anything that climbs out, names a scheme or a host,
    uses backslashes or still holds an escape after decoding is refused."""
    allowed = tuple(allowed)
    decoded = unquote(value)
    hint = "use one of " + ", ".join(allowed)
    if (
        "\\" in decoded
        or "\x00" in decoded
        or "%" in decoded
        or "?" in decoded
        or "#" in decoded
        or "://" in decoded
        or decoded.startswith("//")
        or not decoded.startswith("/")
    ):
        raise _refuse(field, value, "is not a plain absolute path", hint)
    normal = posixpath.normpath(decoded)
    if normal != decoded.rstrip("/") or not any(
        normal == a or normal.startswith(a.rstrip("/") + "/") for a in allowed
    ):
        raise _refuse(field, value, "is outside the paths this call may reach", hint)
    return normal


_SHELL_VAR_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|[1-9])$")


@dataclass(frozen=True)
class ShellVar:
    """An argument the shell completes at run time from one of its variables: `prefix`
    (quoted like any argument) followed by `"$name"` (double-quoted: expanded, never split,
    globbed or run). For the environment a launcher reads (torchrun's `--nnodes="$NNODES"`) or
    a positional parameter (`"$1"`); the name is ours, never a user's value."""

    name: str
    prefix: str = ""

    def __post_init__(self) -> None:
        if not _SHELL_VAR_NAME.match(self.name):
            raise ValueError(f"{self.name!r} is not a shell variable name")

    def render(self) -> str:
        return (shlex.quote(self.prefix) if self.prefix else "") + f'"${self.name}"'


def shell_var(name: str, prefix: str = "") -> ShellVar:
    """`prefix` then the value of the shell variable `name` at run time, as one argument."""
    return ShellVar(name, prefix)


def shell_line(argv: Sequence[str | ShellVar]) -> str:
    """One shell command line from an argument list: every argument quoted, so none of them
    can add a command, a redirection or a substitution (a `ShellVar` expands to one argument)."""
    return " ".join(a.render() if isinstance(a, ShellVar) else shlex.quote(str(a)) for a in argv)


def shell_script(*commands: Sequence[str | ShellVar], joiner: str = " && ") -> str:
    """Several commands, each from an argument list and quoted by `shell_line`, joined by a
    fixed operator of ours."""
    if joiner not in (" && ", "; ", "\n"):
        raise ValueError(f"joiner {joiner!r} is not one of ours")
    return joiner.join(shell_line(c) for c in commands)
