"""The program a model-download Job runs (`python -c PROGRAM`), written for Mountpoint for S3.

Mountpoint for Amazon S3 only writes new files, sequentially, and makes an object of a file when
it is closed: no rename, no append, no overwrite. `huggingface-cli download --local-dir` writes
`.incomplete` files and renames them into place, which fails there. So the program downloads
each file of the repository with `hf_hub_download` into a local scratch directory (the pod's
emptyDir), then copies it into the mounted target with one sequential write and removes it
from scratch. A file cut mid-copy never appears in the bucket; a file already in the target with
its full size is skipped, which is how a new pod of the Job resumes.

Everything comes from the environment: HF_REPO, HF_REVISION, HF_TARGET, HF_SCRATCH and HF_TOKEN
(from the Secret by reference; never in the arguments, never printed). The lines it prints are
the ones the simulated download prints (`sim.k8s.controllers.downloads`) and the ones
workload-svc reads the progress from.
"""

from __future__ import annotations

# The marker the emulator and the tests recognise the program by (its first line).
MARKER = "# hyperpilot model download: hf_hub_download to scratch, sequential copy to target"

PROGRAM = (
    MARKER
    + """
import os
import shutil

from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.hf_api import RepoFile

repo = os.environ["HF_REPO"]
revision = os.environ.get("HF_REVISION") or "main"
target = os.environ["HF_TARGET"]
scratch = os.environ["HF_SCRATCH"]
token = os.environ.get("HF_TOKEN") or None


def human(size):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{int(size)} B"


def progress(done, total, files_done, files):
    percent = 100 if done >= total else min(99, done * 100 // max(total, 1))
    print(
        f"download progress: {percent}% ({files_done}/{files} files,"
        f" {human(done)} of {human(total)})",
        flush=True,
    )


def size_in_target(path):
    try:
        return os.path.getsize(os.path.join(target, path))
    except OSError:
        return None


tree = HfApi(token=token).list_repo_tree(repo, revision=revision, recursive=True)
wanted = sorted(((f.path, f.size or 0) for f in tree if isinstance(f, RepoFile)))
total = sum(size for _, size in wanted)
print(f"Fetching {len(wanted)} files from {repo}@{revision} into {target}", flush=True)
present = [(p, s) for p, s in wanted if size_in_target(p) == s]
pending = [(p, s) for p, s in wanted if size_in_target(p) != s]
done = sum(size for _, size in present)
for path, _ in present:
    print(f"skipping {path}: already complete in {target}", flush=True)
if present:
    print(
        f"resuming: {len(present)} of {len(wanted)} files ({human(done)}) already"
        f" downloaded, {len(pending)} to fetch",
        flush=True,
    )
progress(done, total, len(present), len(wanted))
finished = len(present)
for path, size in pending:
    local = hf_hub_download(repo, path, revision=revision, local_dir=scratch, token=token)
    destination = os.path.join(target, path)
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    if os.path.lexists(destination):
        os.remove(destination)  # a stale file of another size (the bucket mounts allow-delete)
    with open(local, "rb") as source, open(destination, "wb") as sink:
        shutil.copyfileobj(source, sink, 8 * 1024 * 1024)  # one sequential write
    os.remove(local)  # scratch holds one file at a time
    done += size
    finished += 1
    print(f"downloaded {path} ({human(size)})", flush=True)
    progress(done, total, finished, len(wanted))
print(target, flush=True)
"""
)
