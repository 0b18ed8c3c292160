"""Reaching into a cluster with the caller's own AWS identity, as kubectl does: `hyperpilot
clusters kubeconfig` and `clusters token` (its credential plugin), `hyperpilot jobs exec` and
`hyperpilot endpoints port-forward`.

Nothing passes through Hyperpilot but the kubeconfig (the EKS endpoint and its certificate
authority, no token): the commands run the kubectl installed with Hyperpilot against the
cluster's API server, authenticated by an EKS token signed from the caller's AWS credentials, so
what they may do is what the cluster's access entries give that IAM identity. Arguments reach
kubectl as an argument list, never through a shell.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from hyperpilot.client import UsageError
from hyperpilot.commands import clusters, endpoints, jobs
from hyperpilot.commands.common import Cluster, active_cluster, client, examples
from shared.boundary import api_path

ClusterName = Annotated[str | None, typer.Argument(help="Cluster (the active one if omitted)")]
EKS_TOKEN_SECONDS = 14 * 60  # EKS accepts a token for 15 minutes


def _kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if not found:
        raise UsageError("kubectl is not installed", "install Hyperpilot with its dependencies")
    return found


def _kubeconfig(cluster: str | None, plugin: str = "hyperpilot") -> dict[str, Any]:
    with client() as api:
        name = active_cluster(api, cluster)
        config: dict[str, Any] = api.get(api_path("clusters", name, "kubeconfig"), plugin=plugin)
    if plugin == "hyperpilot":  # this installation's own interpreter, wherever it is
        for user in config["users"]:
            exec_ = user["user"]["exec"]
            exec_["command"] = sys.executable
            exec_["args"] = ["-m", "hyperpilot", *exec_["args"]]
    return config


@contextmanager
def _kubeconfig_file(cluster: str | None) -> Iterator[str]:
    config = _kubeconfig(cluster)
    fd, path = tempfile.mkstemp(prefix="hyperpilot-kubeconfig-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w") as out:
            yaml.safe_dump(config, out)
        yield path
    finally:
        os.unlink(path)


@clusters.app.command(
    epilog=examples(
        "hyperpilot clusters kubeconfig demo --write ~/.kube/hyperpilot-demo",
        "KUBECONFIG=~/.kube/hyperpilot-demo kubectl get pods -A",
        "hyperpilot clusters kubeconfig demo --plugin aws",
    )
)
def kubeconfig(
    cluster: ClusterName = None,
    write: Annotated[
        Path | None, typer.Option("--write", help="Write it to this file (mode 0600)")
    ] = None,
    plugin: Annotated[
        str,
        typer.Option(
            help="Credential plugin: hyperpilot (`hyperpilot clusters token`) or aws"
            " (`aws eks get-token`)"
        ),
    ] = "hyperpilot",
) -> None:
    """A kubeconfig for the cluster: its endpoint and CA, authenticated by your AWS identity."""
    if plugin not in ("hyperpilot", "aws"):
        raise UsageError(f"plugin {plugin!r} is not known", "use --plugin hyperpilot or aws")
    text = yaml.safe_dump(_kubeconfig(cluster, plugin), sort_keys=False)
    if write is None:
        sys.stdout.write(text)
        return
    path = write.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    typer.echo(f"wrote {path}; use it with KUBECONFIG={path} kubectl ...")


@clusters.app.command(
    epilog=examples("hyperpilot clusters token demo --region us-east-1"), hidden=False
)
def token(
    eks_cluster: Annotated[str, typer.Argument(help="The EKS cluster's name")],
    region: Annotated[str, typer.Option(help="Its AWS region")],
) -> None:
    """An EKS token as a kubectl credential plugin answers (ExecCredential JSON), signed from
    your AWS credentials; what a kubeconfig from `clusters kubeconfig` runs."""
    from shared.adapters import aws_session
    from shared.adapters.eks_kube import eks_token
    from shared.errors import StageError

    try:
        signed = eks_token(aws_session.session(), eks_cluster, region, "the hyperpilot CLI")
    except StageError as exc:  # no credentials, or STS not reachable: said, not a traceback
        raise UsageError(f"{exc.code}: {exc.message}", exc.hint) from None
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + EKS_TOKEN_SECONDS))
    credential = {
        "kind": "ExecCredential",
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "spec": {},
        "status": {"expirationTimestamp": expires, "token": signed},
    }
    sys.stdout.write(json.dumps(credential) + "\n")


def _job_pod(job: dict[str, Any], pod: str | None) -> str:
    observed = (job.get("live") or {}).get("observed") or {}
    pods = [p for p in observed.get("pods") or [] if isinstance(p, dict)]
    names = [str(p.get("name")) for p in pods]
    if pod is not None:
        if pod not in names:
            raise UsageError(
                f"pod {pod} is not one of job {job.get('name')}'s pods",
                "use one of: " + (", ".join(names) or "(none yet: wait for the job to start)"),
            )
        return pod
    running = [str(p.get("name")) for p in pods if str(p.get("phase", "")).lower() == "running"]
    if not running:
        raise UsageError(
            f"job {job.get('name')} has no running pod",
            "wait for it to start (hyperpilot jobs describe) or name one with --pod",
        )
    return running[0]


@jobs.app.command(
    "exec",
    epilog=examples(
        "hyperpilot jobs exec llama-sft -- nvidia-smi",
        "hyperpilot jobs exec llama-sft --pod llama-sft-worker-1 -it -- bash",
    ),
)
def exec_(
    job: Annotated[str, typer.Argument(help="Job name", show_default=False)],
    command: Annotated[list[str], typer.Argument(help="The command and its arguments (after --)")],
    pod: Annotated[
        str | None, typer.Option(help="One of the job's pods (a running one if omitted)")
    ] = None,
    container: Annotated[
        str | None, typer.Option("--container", help="Container (the default one if omitted)")
    ] = None,
    stdin: Annotated[bool, typer.Option("--stdin", "-i", help="Pass stdin to the command")] = False,
    tty: Annotated[bool, typer.Option("--tty", "-t", help="Allocate a terminal")] = False,
    cluster: Cluster = None,
) -> None:
    """Run a command in one of a job's pods (kubectl exec, with your AWS identity)."""
    with client() as api:
        name = active_cluster(api, cluster)
        found: dict[str, Any] = api.get(api_path("clusters", name, "jobs", job))
    target = _job_pod(found, pod)
    args = ["exec", target, "-n", str(found.get("namespace") or "default")]
    if container:
        args += ["-c", container]
    if stdin:
        args.append("-i")
    if tty:
        args.append("-t")
    with _kubeconfig_file(name) as path:
        done = subprocess.run([_kubectl(), "--kubeconfig", path, *args, "--", *command])
    raise typer.Exit(done.returncode)


def _endpoint_target(endpoint: dict[str, Any]) -> str:
    objects = [o for o in endpoint.get("objects") or [] if isinstance(o, dict)]
    for kind, prefix in (("Service", "service"), ("Deployment", "deployment")):
        for obj in objects:
            if obj.get("kind") == kind and obj.get("name"):
                return f"{prefix}/{obj['name']}"
    raise UsageError(
        f"endpoint {endpoint.get('name')} has no Service or Deployment in its cluster",
        "port-forward is for self-managed endpoints (kind vllm, sglang or container)",
    )


@endpoints.app.command(
    "port-forward",
    epilog=examples(
        "hyperpilot endpoints port-forward qwen 8000",
        "hyperpilot endpoints port-forward qwen 18000:8000",
    ),
)
def port_forward(
    name: Annotated[str, typer.Argument(help="Endpoint name", show_default=False)],
    ports: Annotated[
        list[str], typer.Argument(help="[LOCAL:]REMOTE port pairs, e.g. 8000 or 18000:8000")
    ],
    address: Annotated[str, typer.Option(help="Local address to listen on")] = "127.0.0.1",
    cluster: Cluster = None,
) -> None:
    """Forward local ports to an endpoint's pods (kubectl port-forward, with your AWS identity)."""
    try:
        ipaddress.ip_address(address)
    except ValueError:
        if address != "localhost":
            raise UsageError(
                f"{address!r} is not an IP address", "use an address such as 127.0.0.1 or 0.0.0.0"
            ) from None
    for pair in ports:
        parts = pair.split(":")
        if len(parts) > 2 or not all(p.isdigit() and 0 <= int(p) < 65536 for p in parts if p):
            raise UsageError(
                f"{pair!r} is not a port pair", "use REMOTE or LOCAL:REMOTE, e.g. 18000:8000"
            )
    with client() as api:
        cluster_name = active_cluster(api, cluster)
        found: dict[str, Any] = api.get(api_path("endpoints", name), cluster=cluster_name)
    target = _endpoint_target(found)
    namespace = str(found.get("namespace") or "default")
    with _kubeconfig_file(cluster_name) as path:
        done = subprocess.run(
            [
                _kubectl(),
                "--kubeconfig",
                path,
                "port-forward",
                "-n",
                namespace,
                "--address",
                address,
                target,
                *ports,
            ]
        )
    raise typer.Exit(done.returncode)
