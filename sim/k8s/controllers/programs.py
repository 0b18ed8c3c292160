"""What a simulated container does: which lines it logs, how long it runs, how it exits.

Decided from the container itself, in this order:
1. pod annotations `sim.hyperpilot.dev/exit-code`, `/run-seconds`, `/steps`, `/hang-after-steps`;
2. the command: `echo`, `printf`, `print(...)`, `sleep N`, `exit N`, `true`, `false` are
   interpreted; a command that is only made of these ends when they end;
3. the kind of program: training launchers (torchrun, train*.py, ...) in the command, or a
   training image without a command in a job's pod (one that runs to completion, or that a
   batch Job or an operator's *Job owns), log step/loss lines (`--max_steps N` in the command
   sets how many); a service's pod (a ReplicaSet's, StatefulSet's or DaemonSet's, such as an
   operator's controller) never trains, whatever its image is called; model downloads fetch the repository's files
   into the storage they mount and resume from what is already there (`downloads.py`; the
   rendered Mountpoint-safe download is known by its environment, before anything else),
   inference servers log their startup and serve,
   base images without a command exit 0; anything else runs to completion in a
   run-to-completion pod (restartPolicy Never/OnFailure) and keeps running otherwise.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sim.k8s.controllers.downloads import from_env as download_from_env
from sim.k8s.controllers.downloads import parse as parse_download
from sim.k8s.controllers.downloads import run_download
from sim.k8s.files import SharedFiles
from sim.k8s.mlflow_client import Reporter
from sim.k8s.store import Obj
from sim.profile import TimeProfile

# an absolute path as the container sees it -> (volume key, path inside the volume)
Locator = Callable[[str], tuple[str, str]]

ANNOTATION = "sim.hyperpilot.dev/"
TRAINING = re.compile(
    r"torchrun|train|pytorch|megatron|nemo|deepspeed|accelerate|verl|fsdp|llama-factory|hyperpodrun",
    re.I,
)
SERVING = re.compile(
    r"vllm|sglang|text-generation|tgi|triton|tensorrt|djl|lmi|sagemaker-inference|serve", re.I
)
MAX_STEPS = re.compile(r"--max[_-]steps[= ](\d+)|(?<![\w.])max_steps=(\d+)")
DOWNLOAD = re.compile(
    r"huggingface-cli download|hf download|snapshot_download|hf_hub_download|aws s3 (cp|sync)|s5cmd",
    re.I,
)
BASE_IMAGES = re.compile(
    r"(^|/)(busybox|alpine|ubuntu|debian|amazonlinux|python|bash|aws-cli|curl)(:|$)"
)
_FINITE = {
    "echo",
    "printf",
    "sleep",
    "exit",
    "true",
    "false",
    "print",
    "cat",
    "ls",
    "date",
    "env",
    "set",
}


@dataclass
class Program:
    """Start lines, then `steps` periodic lines every `interval` s (None: forever), then exit."""

    start_lines: list[str]
    exit_code: int = 0
    timeline: list[tuple[float, str]] = field(default_factory=list)  # (sleep before, line)
    duration: float | None = 0.0  # seconds after the start lines (None: runs until killed)
    step_line: Callable[[int], str] | None = None
    interval: float = 1.0
    steps: int | None = None
    hang_after: int | None = None  # stop logging after this many steps (keeps running)
    # a program with its own logic (after the start lines): awaited with a line writer
    body: Callable[[Callable[[str], None]], Awaitable[None]] | None = None


def _script(container: Obj) -> str:
    parts = list(container.get("command") or []) + list(container.get("args") or [])
    if (
        len(parts) >= 3
        and parts[0].rsplit("/", 1)[-1] in ("sh", "bash", "ash")
        and parts[1] in ("-c", "-ec", "-xc", "-lc")
    ):
        return " ".join(parts[2:])
    return shlex.join(parts) if parts else ""


def _statements(script: str) -> list[str]:
    return [s.strip() for s in re.split(r";|&&|\|\||\n", script) if s.strip()]


def _unquote(text: str) -> str:
    try:
        return " ".join(shlex.split(text))
    except ValueError:
        return text.strip("'\"")


def _interpret(script: str) -> Program | None:
    """A program of echo/sleep/exit statements, or None when the script is something else."""
    timeline: list[tuple[float, str]] = []
    pending = 0.0
    code = 0

    def done(duration: float | None) -> Program:
        return Program([], exit_code=code, duration=duration, timeline=timeline)

    for stmt in _statements(script):
        word = stmt.split()[0].rsplit("/", 1)[-1]
        if word in ("echo", "printf"):
            text = _unquote(stmt.split(None, 1)[1]) if " " in stmt else ""
            if word == "echo" and text.startswith("-n "):
                text = text[3:]
            for line in text.replace("\\n", "\n").rstrip("\n").split("\n") if text else [""]:
                timeline.append((pending, line))
                pending = 0.0
        elif word == "sleep":
            arg = stmt.split()[1] if len(stmt.split()) > 1 else "0"
            if arg in ("infinity", "inf"):
                return done(None)
            try:
                pending += float(arg.rstrip("s"))
            except ValueError:
                return None
        elif word == "exit":
            arg = stmt.split()[1] if len(stmt.split()) > 1 else "0"
            code = int(arg) if arg.isdigit() else 1
            return done(pending)
        elif word == "true":
            code = 0
        elif word == "false":
            code = 1
        elif word.startswith("python") and "-c" in stmt:
            printed = re.findall(r"print\((['\"])(.*?)\1\)", stmt)
            if not printed and "print(" in stmt:
                return None
            for p in printed:
                timeline.append((pending, p[1]))
                pending = 0.0
        elif word in _FINITE:
            continue
        else:
            return None
    return done(pending)


def _training_line(total: int | None) -> Callable[[int], str]:
    def line(step: int) -> str:
        loss = 2.5 * math.exp(-step / 60.0) + 0.35
        of = f"/{total}" if total else ""
        return f"step {step}{of} loss={loss:.4f} lr=3.0e-04 tokens_per_sec=48211"

    return line


def _steps(script: str) -> int | None:
    found = MAX_STEPS.search(script)
    return int(found.group(1) or found.group(2)) if found else None


_SERVICE_OWNERS = ("ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController")


def is_job_pod(pod: Obj) -> bool:
    """A job's pod: it runs to completion, or a Job (batch, or an operator's PyTorchJob,
    HyperPodPyTorchJob, ...) owns it."""
    if pod["spec"].get("restartPolicy", "Always") != "Always":
        return True
    owners = pod["metadata"].get("ownerReferences") or []
    return any(str(ref.get("kind", "")).endswith("Job") for ref in owners)


def is_service_pod(pod: Obj) -> bool:
    """A long-running service's pod (an operator's controller, a web server): a ReplicaSet,
    StatefulSet or DaemonSet keeps it."""
    owners = pod["metadata"].get("ownerReferences") or []
    return any(ref.get("kind") in _SERVICE_OWNERS for ref in owners)


def trains(pod: Obj, image: str, script: str) -> bool:
    """A training launcher in its command (torchrun, train.py, ...) outside a service's pod, or a
    job's pod whose image is a training image and has no command of its own."""
    if is_service_pod(pod):
        return False
    return bool(
        TRAINING.search(script) or (not script and is_job_pod(pod) and TRAINING.search(image))
    )


def program_for(
    pod: Obj,
    container: Obj,
    profile: TimeProfile,
    files: SharedFiles | None = None,
    locate: Locator | None = None,
    reporter: Reporter | None = None,
) -> Program:
    """`files` and `locate` give a program the storage it mounts (without: nothing persists);
    `reporter` is where a training program logs its steps' metrics (its MLflow run)."""
    annotations = pod["metadata"].get("annotations") or {}

    def ann(name: str) -> str | None:
        value = annotations.get(ANNOTATION + name)
        return str(value) if value is not None else None

    image = str(container.get("image") or "")
    script = _script(container)
    text = f"{image} {script}"
    interval = max(profile.container_start, 0.02)
    finite = pod["spec"].get("restartPolicy", "Always") != "Always"
    where = locate or (lambda path: ("", path))
    if script and (interpreted := _interpret(script)) is not None:
        program = interpreted
    elif (download := download_from_env(container, script)) is not None:
        volume, prefix = where(download.local_dir)
        program = Program(
            [
                f"[sim] {container['name']}: {download.repo_id}@{download.revision} via"
                f" {download.scratch} into {download.local_dir}"
            ],
            body=run_download(
                download,
                files or SharedFiles(),
                volume,
                prefix,
                interval * 2,
                scratch=where(download.scratch or ""),
            ),
        )
    elif trains(pod, image, script):
        steps = int(ann("steps") or _steps(script) or 100)
        program = Program(
            [
                f"[sim] {container['name']}: initializing process group (NCCL)",
                "[sim] world size ready",
            ],
            exit_code=0,
            step_line=_training_line(steps),
            interval=interval,
            steps=steps,
            hang_after=int(hang) if (hang := ann("hang-after-steps")) else None,
        )
    elif DOWNLOAD.search(text) and (download := parse_download(script)) is not None:
        volume, prefix = where(download.local_dir)
        program = Program(
            [f"[sim] {script}"],
            body=run_download(download, files or SharedFiles(), volume, prefix, interval * 2),
        )
    elif DOWNLOAD.search(text):
        program = Program(
            [f"[sim] {script or image}"],
            step_line=lambda n: f"download progress: {n * 10}%",
            interval=interval * 2,
            steps=10,
        )
    elif SERVING.search(text):
        program = Program(
            [
                "INFO:     Started server process [1]",
                "INFO:     Waiting for application startup.",
                "INFO:     Loading model weights",
                "INFO:     Application startup complete.",
                "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
            ],
            duration=None,
        )
    elif not script and BASE_IMAGES.search(image):
        program = Program([], duration=0.0)
    elif finite:  # a run-to-completion pod (Job, bare pod) running something we do not model
        program = Program(
            [f"[sim] {container['name']}: running {script or image}"],
            duration=interval * 20,
        )
    else:
        program = Program([f"[sim] {container['name']} started ({image})"], duration=None)
    if ann("exit-code") is not None:
        program.exit_code = int(ann("exit-code") or 0)
        if program.duration is None and program.steps is None:
            program.duration = 0.0
    if ann("run-seconds") is not None:
        program.duration = float(ann("run-seconds") or 0)
        program.steps = None if program.step_line is None else program.steps
        if program.step_line is not None:
            program.steps = max(1, int(program.duration / program.interval))
    if reporter is not None and program.step_line is not None and trains(pod, image, script):
        program.step_line = reporter.wrap(program.step_line, lambda: program.steps)
    return program
