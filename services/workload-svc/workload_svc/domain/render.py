"""Recipes rendered to the custom resources that run them (pure: a spec in, objects out).

PyTorch, a shell script, LLaMA-Factory and MS-Swift (SFT, GRPO) render to a HyperPodPyTorchJob;
VERL to a RayJob whose head serves the Ray dashboard (port 8265). Every pod mounts the shared bucket's claim at /s3,
is placed on its instance group by HyperPod's node label and tolerates nothing it does not need.
A job's `secret_env` renders to `valueFrom.secretKeyRef` on every container (`secret_refs`).
A model download renders to a batch/v1 Job whose token comes from a Secret by reference and
which writes to the bucket only as Mountpoint for S3 allows (`download_program`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.boundary import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    ShellVar,
    object_name,
    priority_class_object,
    shell_line,
    shell_script,
    shell_var,
    team_queue,
)
from shared.contracts.workloads import (
    DEEP_HEALTH_CHECK_LABEL,
    MOUNT_PATH,
    NAMESPACE,
    S3_CLAIM,
    TOPOLOGY_PREFIX,
    Hyperparameters,
    JobBase,
    LlamaFactoryRecipe,
    ModelDownloadSpec,
    MsSwiftRecipe,
    PyTorchRecipe,
    ShellRecipe,
    VerlRecipe,
)
from workload_svc.domain.download_program import PROGRAM as DOWNLOAD_PROGRAM
from workload_svc.domain.mlflow_access import pod_identity
from workload_svc.domain.secret_refs import key_ref

KubeObject = dict[str, Any]

HPJ_API = "sagemaker.amazonaws.com/v1"
HPJ_KIND = "HyperPodPyTorchJob"
RAY_API = "ray.io/v1"
RAY_KIND = "RayJob"
BATCH_API = "batch/v1"
JOB_KIND = "Job"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
MANAGED_BY = "app.kubernetes.io/managed-by"
RECIPE_LABEL = "hyperpilot.dev/recipe"
JOB_LABEL = "hyperpilot.dev/job"
RAY_DASHBOARD_PORT = 8265
DOWNLOAD_SCRATCH = "/scratch"  # the download Job's emptyDir

IMAGES = {
    "pytorch": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
    "shell": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
    "llama-factory": "hiyouga/llamafactory:0.9.3",
    "ms-swift": "modelscope/ms-swift:3.5.0",
    "verl": "verlai/verl:app-verl0.4-vllm0.8.5-mcore0.12.1",
    "model-download": "python:3.11-slim",
}


@dataclass(frozen=True)
class Rendered:
    api_version: str
    kind: str
    body: KubeObject


def _labels(name: str, recipe: str) -> dict[str, str]:
    return {MANAGED_BY: "hyperpilot", JOB_LABEL: name, RECIPE_LABEL: recipe}


def job_metadata(spec: Launched | VerlRecipe) -> KubeObject:
    """The job object's name, namespace and labels: with a team, its namespace and the labels
    task governance's Kueue reads (the team's LocalQueue, the priority class)."""
    labels = _labels(spec.name, spec.recipe)
    if spec.team is not None:
        labels[QUEUE_LABEL] = team_queue(spec.team)
        if spec.priority is not None:
            labels[PRIORITY_LABEL] = priority_class_object(spec.priority)
    return {"name": spec.name, "namespace": spec.namespace(), "labels": labels}


def _volume(spec: JobBase | ModelDownloadSpec) -> tuple[list[KubeObject], list[KubeObject]]:
    """The shared bucket at /s3, then each storage claim the spec mounts (`volumes`), as pod
    volumes storage-0, storage-1, ... (a claim's name may be longer than a volume's may)."""
    volumes = [{"name": "shared", "persistentVolumeClaim": {"claimName": S3_CLAIM}}]
    mounts: list[KubeObject] = [{"name": "shared", "mountPath": MOUNT_PATH}]
    for i, volume in enumerate(spec.volumes):
        name = object_name("storage", str(i), field="volumes")
        claim: KubeObject = {"claimName": volume.claim}
        mount: KubeObject = {"name": name, "mountPath": volume.mount_path}
        if volume.read_only:
            claim["readOnly"] = True
            mount["readOnly"] = True
        volumes.append({"name": name, "persistentVolumeClaim": claim})
        mounts.append(mount)
    return volumes, mounts


def _resources(spec: JobBase) -> KubeObject:
    amounts: dict[str, str] = spec.resources.accelerators()
    if spec.resources.efa:
        amounts["vpc.amazonaws.com/efa"] = str(spec.resources.efa)
    requests = dict(amounts)
    if spec.resources.cpu:
        requests["cpu"] = spec.resources.cpu
    if spec.resources.memory:
        requests["memory"] = spec.resources.memory
    return {"requests": requests, "limits": amounts} if requests else {}


def _env(spec: JobBase) -> list[KubeObject]:
    env: list[KubeObject] = [{"name": k, "value": v} for k, v in sorted(spec.env.items())]
    # secret_env by reference: the pod reads the value from the Secret, the spec never holds it.
    for name, ref in sorted(spec.secret_env.items()):
        secret, key = key_ref(ref)
        env.append({"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    env.append({"name": "HYPERPILOT_JOB", "value": spec.name})
    env.append({"name": "SHARED_DATA", "value": MOUNT_PATH})
    if spec.mlflow_tracking_uri:
        # The run is named after the job: the link between an MLflow run and the job.
        env.append({"name": "MLFLOW_TRACKING_URI", "value": spec.mlflow_tracking_uri})
        env.append({"name": "MLFLOW_RUN_NAME", "value": spec.name})
        env.append({"name": "MLFLOW_EXPERIMENT_NAME", "value": spec.name})
    return env


def placement(spec: JobBase) -> KubeObject:
    """The pod spec's placement: the instance group's node label, then `spec.placement` as
    node affinity (deep-health-check-passed nodes; nodes with the topology label) and pod
    affinity (the job's pods under one network node of the layer, required or preferred)."""
    chosen = spec.placement
    pod_spec: KubeObject = {"nodeSelector": {GROUP_LABEL: spec.instance_group}}
    required: list[KubeObject] = []
    if chosen.deep_health_check_passed:
        required.append({"key": DEEP_HEALTH_CHECK_LABEL, "operator": "In", "values": ["Passed"]})
    affinity: KubeObject = {}
    if chosen.topology is not None:
        key = TOPOLOGY_PREFIX + chosen.topology
        term = {"labelSelector": {"matchLabels": {JOB_LABEL: spec.name}}, "topologyKey": key}
        if chosen.topology_required:
            required.append({"key": key, "operator": "Exists"})
            affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        else:
            affinity["podAffinity"] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": term}
                ]
            }
    if required:
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": required}]
            }
        }
    if affinity:
        pod_spec["affinity"] = affinity
    # a SageMaker tracking server's pods run as its IRSA service account (mlflow_access)
    pod_spec.update(pod_identity(spec.mlflow_tracking_uri))
    return pod_spec


def nproc(spec: JobBase) -> int:
    return spec.nproc_per_node or max(spec.resources.gpus, 1)


# torchrun's rendezvous, from the environment the training operator sets on every pod.
TORCHRUN: tuple[str | ShellVar, ...] = (
    "torchrun",
    shell_var("NNODES", "--nnodes="),
    shell_var("NODE_RANK", "--node_rank="),
    shell_var("NPROC_PER_NODE", "--nproc_per_node="),
    shell_var("MASTER_ADDR", "--master_addr="),
    shell_var("MASTER_PORT", "--master_port="),
)


Launched = PyTorchRecipe | ShellRecipe | LlamaFactoryRecipe | MsSwiftRecipe


def _steps(hp: Hyperparameters, flag: str) -> list[str]:
    return [] if hp.max_steps is None else [flag, str(hp.max_steps)]


def launch_argv(spec: PyTorchRecipe | LlamaFactoryRecipe | MsSwiftRecipe) -> list[str | ShellVar]:
    """The argument list of the launcher each recipe runs on every node (torchrun's rendezvous
    comes from the operator's MASTER_ADDR/NNODES/NODE_RANK environment; MS-Swift reads the same
    variables itself). Every user value is one argument of its own; `command_of` quotes each."""
    report_to = "mlflow" if spec.mlflow_tracking_uri else "none"
    if isinstance(spec, PyTorchRecipe):
        return [*TORCHRUN, spec.script, *spec.args]
    output = spec.output or f"{MOUNT_PATH}/checkpoints/{spec.name}"
    hp = spec.hyperparameters
    sizes = [
        "--per_device_train_batch_size", str(hp.batch_size),
        "--gradient_accumulation_steps", str(hp.gradient_accumulation_steps),
    ]  # fmt: skip
    if isinstance(spec, LlamaFactoryRecipe):
        # FORCE_TORCHRUN=1 is an assignment word of the shell (left bare by the quoting).
        return [
            "FORCE_TORCHRUN=1", "llamafactory-cli", "train",
            "--stage", "sft", "--do_train", "true",
            "--model_name_or_path", spec.model,
            "--dataset_dir", spec.dataset, "--dataset", "train",
            "--template", spec.template, "--finetuning_type", spec.finetuning_type,
            "--num_train_epochs", f"{spec.epochs:g}", "--learning_rate", f"{spec.learning_rate:g}",
            *sizes, "--cutoff_len", str(hp.max_length), "--lora_rank", str(hp.lora_rank),
            *_steps(hp, "--max_steps"),
            "--output_dir", output, "--report_to", report_to, "--logging_steps", "1",
        ]  # fmt: skip
    if spec.algorithm == "grpo":
        verb = [
            "swift", "rlhf", "--rlhf_type", "grpo",
            "--reward_funcs", *spec.reward_funcs,
            "--num_generations", str(spec.num_generations),
        ]  # fmt: skip
    else:
        verb = ["swift", "sft"]
    return [
        *verb,
        "--model", spec.model, "--dataset", spec.dataset,
        "--train_type", spec.train_type, "--num_train_epochs", f"{spec.epochs:g}",
        "--learning_rate", f"{spec.learning_rate:g}",
        *sizes, "--max_length", str(hp.max_length), "--lora_rank", str(hp.lora_rank),
        *_steps(hp, "--max_steps"),
        "--output_dir", output, "--report_to", report_to, "--logging_steps", "1",
    ]  # fmt: skip


def command_of(spec: Launched) -> list[str]:
    """The container's command: bash running the launcher's line, quoted by `shell_line`; a
    shell recipe's script is bash's own program (`-e`: it stops at the first failing command),
    on every worker."""
    if isinstance(spec, ShellRecipe):
        return ["/bin/bash", "-ec", spec.body]
    return ["/bin/bash", "-c", shell_line(launch_argv(spec))]


def _run_policy(spec: JobBase) -> KubeObject:
    run = spec.run_policy
    policy: KubeObject = {
        "jobMaxRetryCount": run.job_max_retry_count,
        "cleanPodPolicy": run.clean_pod_policy,
    }
    if run.restart_policy is not None:
        restart: KubeObject = {
            "evalPeriodSeconds": run.restart_policy.eval_period_seconds,
            "numRestartBeforeFullJobRestart": run.restart_policy.num_restart_before_full_job_restart,
        }
        if run.restart_policy.max_full_job_restarts is not None:
            restart["maxFullJobRestarts"] = run.restart_policy.max_full_job_restarts
        policy["restartPolicy"] = restart
    if run.log_monitoring:
        monitors = []
        for monitor in run.log_monitoring:
            entry: KubeObject = {"name": monitor.name, "logPattern": monitor.log_pattern}
            if monitor.expected_start_cutoff_seconds is not None:
                entry["expectedStartCutOffInSeconds"] = monitor.expected_start_cutoff_seconds
            if monitor.expected_recurring_frequency_seconds is not None:
                entry["expectedRecurringFrequencyInSeconds"] = (
                    monitor.expected_recurring_frequency_seconds
                )
            monitors.append(entry)
        policy["logMonitoringConfiguration"] = monitors
    if run.active_deadline_seconds is not None:
        policy["activeDeadlineSeconds"] = run.active_deadline_seconds
    return policy


def pytorch_job(spec: Launched) -> Rendered:
    volumes, mounts = _volume(spec)
    container: KubeObject = {
        "name": "pytorch",
        "image": spec.image or IMAGES[spec.recipe],
        "command": command_of(spec),
        "env": _env(spec),
        "volumeMounts": mounts,
        "workingDir": MOUNT_PATH,
    }
    resources = _resources(spec)
    if resources:
        container["resources"] = resources
    body: KubeObject = {
        "apiVersion": HPJ_API,
        "kind": HPJ_KIND,
        "metadata": job_metadata(spec),
        "spec": {
            "nprocPerNode": str(nproc(spec)),
            "replicaSpecs": [
                {
                    "name": "pods",
                    "replicas": spec.replicas,
                    "template": {
                        "metadata": {"labels": _labels(spec.name, spec.recipe)},
                        "spec": {
                            **placement(spec),
                            "containers": [container],
                            "volumes": volumes,
                        },
                    },
                }
            ],
            "runPolicy": _run_policy(spec),
        },
    }
    if spec.elastic is not None:
        elastic: KubeObject = {
            "minReplicas": spec.elastic.min_replicas,
            "maxReplicas": spec.elastic.max_replicas,
        }
        if spec.elastic.replica_increment_step is not None:
            elastic["replicaIncrementStep"] = spec.elastic.replica_increment_step
        if spec.elastic.replica_discrete_values is not None:
            elastic["replicaDiscreteValues"] = list(spec.elastic.replica_discrete_values)
        if spec.elastic.scaling_timeout_seconds is not None:
            elastic["scalingTimeoutInSeconds"] = spec.elastic.scaling_timeout_seconds
        body["spec"]["elasticPolicy"] = elastic
        body["spec"]["replicaSpecs"][0]["maxReplicas"] = spec.elastic.max_replicas
    return Rendered(HPJ_API, HPJ_KIND, body)


def verl_argv(spec: VerlRecipe) -> list[str]:
    """`python3 -m verl.trainer.main_ppo` and its Hydra overrides, one argument each (the
    RayJob's entrypoint runs in a shell: `ray_job` quotes them with `shell_line`). The paths
    hold no character Hydra's override grammar reads (`VerlRecipe`)."""
    loggers = '["console","mlflow"]' if spec.mlflow_tracking_uri else '["console"]'
    return [
        "python3", "-m", "verl.trainer.main_ppo",
        f"algorithm.adv_estimator={'grpo' if spec.algorithm == 'grpo' else 'gae'}",
        f"data.train_files={spec.train_files}",
        f"data.val_files={spec.val_files}",
        f"actor_rollout_ref.model.path={spec.model}",
        f"trainer.nnodes={spec.replicas}",
        f"trainer.n_gpus_per_node={spec.resources.gpus}",
        f"trainer.total_epochs={spec.epochs}",
        "trainer.project_name=hyperpilot",
        f"trainer.experiment_name={spec.name}",
        f"trainer.default_local_dir={MOUNT_PATH}/checkpoints/{spec.name}",
        f"trainer.logger={loggers}",
    ]  # fmt: skip


def ray_job(spec: VerlRecipe) -> Rendered:
    volumes, mounts = _volume(spec)
    image = spec.image or IMAGES["verl"]
    env = _env(spec)
    total_gpus = spec.replicas * spec.resources.gpus
    entrypoint = shell_line(verl_argv(spec))
    worker: KubeObject = {
        "name": "ray-worker",
        "image": image,
        "env": env,
        "volumeMounts": mounts,
    }
    resources = _resources(spec)
    if resources:
        worker["resources"] = resources
    placed = placement(spec)
    body: KubeObject = {
        "apiVersion": RAY_API,
        "kind": RAY_KIND,
        "metadata": job_metadata(spec),
        "spec": {
            "entrypoint": entrypoint,
            "shutdownAfterJobFinishes": False,
            "backoffLimit": spec.run_policy.job_max_retry_count,
            "entrypointNumGpus": 0,
            "metadata": {"hyperpilot-job": spec.name, "gpus": str(total_gpus)},
            "rayClusterSpec": {
                "rayVersion": "2.43.0",
                "headGroupSpec": {
                    "rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
                    "template": {
                        "metadata": {"labels": _labels(spec.name, spec.recipe)},
                        "spec": {
                            **placed,
                            "containers": [
                                {
                                    "name": "ray-head",
                                    "image": image,
                                    "env": env,
                                    "volumeMounts": mounts,
                                    "ports": [
                                        {"name": "gcs", "containerPort": 6379},
                                        {"name": "dashboard", "containerPort": RAY_DASHBOARD_PORT},
                                        {"name": "client", "containerPort": 10001},
                                    ],
                                }
                            ],
                            "volumes": volumes,
                        },
                    },
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu-workers",
                        "replicas": spec.replicas,
                        "minReplicas": spec.replicas,
                        "maxReplicas": spec.replicas,
                        "rayStartParams": {},
                        "template": {
                            "metadata": {"labels": _labels(spec.name, spec.recipe)},
                            "spec": {
                                **placed,
                                "containers": [worker],
                                "volumes": volumes,
                            },
                        },
                    }
                ],
            },
        },
    }
    if spec.run_policy.active_deadline_seconds is not None:
        body["spec"]["activeDeadlineSeconds"] = spec.run_policy.active_deadline_seconds
    return Rendered(RAY_API, RAY_KIND, body)


def render(spec: JobBase) -> Rendered:
    if isinstance(spec, VerlRecipe):
        return ray_job(spec)
    if isinstance(spec, PyTorchRecipe | ShellRecipe | LlamaFactoryRecipe | MsSwiftRecipe):
        return pytorch_job(spec)
    raise TypeError(f"no renderer for {type(spec).__name__}")


def download_job(spec: ModelDownloadSpec) -> Rendered:
    """A Job that downloads the repository file by file into a local scratch directory (an
    emptyDir) and copies each finished file into the bucket with one sequential write: the
    only kind of write Mountpoint for S3 takes (no rename, append or overwrite), so
    `huggingface-cli download --local-dir` straight into the bucket fails. Retried by the Job's
    back-off: a new pod skips the files already complete in the target (a file cut mid-copy
    never appeared there); the token by Secret reference (`download_program`)."""
    volumes, mounts = _volume(spec)
    volumes.append({"name": "scratch", "emptyDir": {}})
    mounts.append({"name": "scratch", "mountPath": DOWNLOAD_SCRATCH})
    env: list[KubeObject] = [
        {"name": "HF_REPO", "value": spec.repo_id},
        {"name": "HF_REVISION", "value": spec.revision},
        {"name": "HF_TARGET", "value": spec.target_path()},
        {"name": "HF_SCRATCH", "value": f"{DOWNLOAD_SCRATCH}/files"},
        {"name": "HF_HOME", "value": f"{DOWNLOAD_SCRATCH}/hf-home"},
        {"name": "HF_HUB_ENABLE_HF_TRANSFER", "value": "1"},
        {"name": "HF_HUB_DISABLE_PROGRESS_BARS", "value": "1"},
    ]
    if spec.token_secret:
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": spec.token_secret, "key": "token"}},
            }
        )
    # bash -c SCRIPT NAME ARG: the program is "$1", passed as it is (no shell quoting in it).
    script = shell_script(
        ["pip", "install", "-q", "huggingface_hub[hf_transfer]"],
        ["exec", "python", "-u", "-c", shell_var("1")],
    )
    pod_spec: KubeObject = {
        "restartPolicy": "OnFailure",
        "containers": [
            {
                "name": "download",
                "image": IMAGES["model-download"],
                "command": ["/bin/bash", "-c", script, "hf-download", DOWNLOAD_PROGRAM],
                "env": env,
                "volumeMounts": mounts,
            }
        ],
        "volumes": volumes,
    }
    if spec.instance_group:
        pod_spec["nodeSelector"] = {GROUP_LABEL: spec.instance_group}
    body: KubeObject = {
        "apiVersion": BATCH_API,
        "kind": JOB_KIND,
        "metadata": {
            "name": spec.name,
            "namespace": NAMESPACE,
            "labels": _labels(spec.name, "model-download"),
        },
        "spec": {
            "backoffLimit": 6,
            "template": {
                "metadata": {"labels": _labels(spec.name, "model-download")},
                "spec": pod_spec,
            },
        },
    }
    return Rendered(BATCH_API, JOB_KIND, body)
