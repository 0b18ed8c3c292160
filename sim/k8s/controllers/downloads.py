"""A model download as it runs in a container: `huggingface-cli download` (or `hf download`)
into `--local-dir`, or the program workload-svc renders for a bucket mounted by Mountpoint for
S3 (recognised by its `hf_hub_download` and its HF_REPO / HF_TARGET / HF_SCRATCH environment):
each file is fetched into the local scratch directory (an emptyDir: lost with the pod), then
copied into HF_TARGET with one sequential write and removed from scratch.

It fetches the repository's files in order, logging a progress line per transfer tick and a
line per finished file. What it writes lands on the storage the container
mounts at that path (`sim.k8s.files`): on the shared bucket, a file stays once complete. A
restarted download (a new pod of the Job, or the container restarted) lists the target first
and skips every file already complete there: it resumes. A file that was cut mid-transfer is
fetched again from its start (Mountpoint for Amazon S3 uploads an object when its file is
closed and cannot append to it).

The repository's files are made up from its name (the parameter count in it, e.g. `7B`, sizes
the bf16 weights, sharded like `save_pretrained` does), so the same repository always has the
same files.
"""

from __future__ import annotations

import asyncio
import math
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sim.k8s.files import SharedFiles

BYTES_PER_TICK = 500_000_000  # per transfer tick (2 x container_start): 50 MB/s under `real`
SHARD_BYTES = 4_000_000_000
HF_DOWNLOAD = re.compile(r"(?:huggingface-cli|(?<![\w-])hf)\s+download\s+(?P<args>[^;&|\n]+)")
PARAMS = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([BbMm])(?![A-Za-z])")
SMALL_FILES = {
    ".gitattributes": 1_519,
    "LICENSE": 11_343,
    "README.md": 6_214,
    "config.json": 686,
    "generation_config.json": 138,
    "merges.txt": 1_671_853,
    "tokenizer.json": 7_031_645,
    "tokenizer_config.json": 7_305,
    "vocab.json": 2_776_833,
}


@dataclass(frozen=True)
class RepoFile:
    path: str
    size: int


@dataclass(frozen=True)
class Download:
    repo_id: str
    revision: str
    local_dir: str
    scratch: str | None = None  # fetched here first, then copied to local_dir (the target)


def from_env(container: dict[str, Any], script: str) -> Download | None:
    """The download of the rendered Mountpoint-safe program: its repository, revision, target
    and scratch directory come from the container's environment."""
    if "hf_hub_download" not in script:
        return None
    env = {
        e.get("name"): e.get("value")
        for e in container.get("env") or []
        if isinstance(e, dict) and isinstance(e.get("value"), str)
    }
    repo_id, target, scratch = env.get("HF_REPO"), env.get("HF_TARGET"), env.get("HF_SCRATCH")
    if not repo_id or not target or not scratch:
        return None
    return Download(repo_id, env.get("HF_REVISION") or "main", target, scratch)


def parse(script: str) -> Download | None:
    """The repository, revision and target of a `huggingface-cli download` in a shell script."""
    found = HF_DOWNLOAD.search(script)
    if found is None:
        return None
    try:
        words = shlex.split(found.group("args"))
    except ValueError:
        words = found.group("args").split()
    positional: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            if not value and i + 1 < len(words) and not words[i + 1].startswith("--"):
                value = words[i + 1]
                i += 1
            options[name.replace("_", "-")] = value
        else:
            positional.append(word)
        i += 1
    if not positional:
        return None
    repo_id = positional[0]
    revision = options.get("revision") or "main"
    cache = "/root/.cache/huggingface/hub"
    default_dir = f"{cache}/models--{repo_id.replace('/', '--')}/snapshots/{revision}"
    return Download(repo_id, revision, options.get("local-dir") or default_dir)


def repo_files(repo_id: str) -> list[RepoFile]:
    """The files of a model repository, in the order they are fetched (by path)."""
    name = repo_id.rsplit("/", 1)[-1]
    billions = 1.0
    if found := PARAMS.search(name):
        billions = float(found.group(1)) / (1000.0 if found.group(2) in "Mm" else 1.0)
    weights = max(int(billions * 2e9), 1_000_000)  # bf16: 2 bytes a parameter
    files = [RepoFile(path, size) for path, size in SMALL_FILES.items()]
    if weights <= 5_000_000_000:
        files.append(RepoFile("model.safetensors", weights))
    else:
        count = math.ceil(weights / SHARD_BYTES)
        each = weights // count
        for n in range(1, count + 1):
            size = each if n < count else weights - each * (count - 1)
            files.append(RepoFile(f"model-{n:05d}-of-{count:05d}.safetensors", size))
        files.append(RepoFile("model.safetensors.index.json", 27_752 + 120 * count))
    return sorted(files, key=lambda f: f.path)


def human(size: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{int(size)} B"


def progress_line(done: int, total: int, files_done: int, files: int) -> str:
    percent = 100 if done >= total else min(99, done * 100 // max(total, 1))
    return (
        f"download progress: {percent}% ({files_done}/{files} files,"
        f" {human(done)} of {human(total)})"
    )


def run_download(
    download: Download,
    files: SharedFiles,
    volume: str,
    prefix: str,
    tick: float,
    scratch: tuple[str, str] | None = None,
) -> Callable[[Callable[[str], None]], Awaitable[None]]:
    """The container's work: `write` logs a line. `volume`/`prefix` are where the target
    (--local-dir) is; `scratch` (volume, prefix) where a file is fetched before its copy."""

    def inside(path: str, where: str = prefix) -> str:
        return f"{where}/{path}" if where else path

    def finish(path: str, size: int) -> None:
        if scratch is not None:  # fetched into scratch, copied to the target, removed
            files.put(scratch[0], inside(path, scratch[1]), size)
        files.put(volume, inside(path), size)
        if scratch is not None:
            files.remove(scratch[0], inside(path, scratch[1]))

    async def body(write: Callable[[str], None]) -> None:
        wanted = repo_files(download.repo_id)
        total = sum(f.size for f in wanted)
        where = download.local_dir
        write(
            f"Fetching {len(wanted)} files from {download.repo_id}@{download.revision} into {where}"
        )
        present = [f for f in wanted if files.size(volume, inside(f.path)) == f.size]
        pending = [f for f in wanted if f not in present]
        done = sum(f.size for f in present)
        for f in present:
            write(f"skipping {f.path}: already complete in {where}")
        if present:
            write(
                f"resuming: {len(present)} of {len(wanted)} files ({human(done)}) already"
                f" downloaded, {len(pending)} to fetch"
            )
        write(progress_line(done, total, len(present), len(wanted)))
        finished = len(present)
        transferred = 0  # bytes of pending[0] received so far (lost if the container stops)
        while pending:
            await asyncio.sleep(tick)
            budget = BYTES_PER_TICK
            while pending and budget > 0:
                current = pending[0]
                take = min(budget, current.size - transferred)
                transferred += take
                budget -= take
                done += take
                if transferred >= current.size:
                    finish(current.path, current.size)
                    finished += 1
                    write(f"downloaded {current.path} ({human(current.size)})")
                    pending.pop(0)
                    transferred = 0
            write(progress_line(done, total, finished, len(wanted)))
        write(where)

    return body
