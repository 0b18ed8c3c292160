"""The model-download program the Job runs, executed here against a stand-in `huggingface_hub`:
files go through scratch into the target with plain sequential writes (no rename, as on a
Mountpoint for S3 mount), a second run after a kill skips what is complete and fetches the
rest, with the lines the simulated download prints."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workload_svc.domain.download_program import MARKER, PROGRAM
from workload_svc.domain.render import download_job

REPO = {
    "config.json": b"{}",
    "model.safetensors": b"w" * 3000,
    "tokenizer/vocab.json": b"v" * 1500,
}
TOKEN = "hf_NeverPrintedToken"


@dataclass
class RepoFile:
    path: str
    size: int


@dataclass
class RepoFolder:
    path: str


class Killed(Exception):
    """The pod killed while it fetches a file."""


def hub(kill_at: str | None, fetched: list[str]) -> tuple[types.ModuleType, types.ModuleType]:
    class HfApi:
        def __init__(self, token: str | None = None) -> None:
            assert token == TOKEN

        def list_repo_tree(self, repo: str, revision: str, recursive: bool) -> list[Any]:
            assert (repo, revision, recursive) == ("Org/Model-1B", "main", True)
            files = [RepoFile(p, len(b)) for p, b in REPO.items()]
            return [RepoFolder("tokenizer"), *reversed(files)]

    def hf_hub_download(
        repo: str, path: str, revision: str, local_dir: str, token: str | None
    ) -> str:
        assert token == TOKEN
        if path == kill_at:
            raise Killed(path)
        fetched.append(path)
        local = Path(local_dir, path)
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(REPO[path])
        return str(local)

    package = types.ModuleType("huggingface_hub")
    package.HfApi = HfApi  # type: ignore[attr-defined]
    package.hf_hub_download = hf_hub_download  # type: ignore[attr-defined]
    api = types.ModuleType("huggingface_hub.hf_api")
    api.RepoFile = RepoFile  # type: ignore[attr-defined]
    return package, api


def run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kill_at: str | None = None,
) -> tuple[list[str], list[str]]:
    fetched: list[str] = []
    package, api = hub(kill_at, fetched)
    monkeypatch.setitem(sys.modules, "huggingface_hub", package)
    monkeypatch.setitem(sys.modules, "huggingface_hub.hf_api", api)
    for name, value in {
        "HF_REPO": "Org/Model-1B",
        "HF_REVISION": "main",
        "HF_TARGET": str(tmp_path / "bucket/models/Model-1B"),
        "HF_SCRATCH": str(tmp_path / "scratch/files"),
        "HF_TOKEN": TOKEN,
    }.items():
        monkeypatch.setenv(name, value)

    def no_rename(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Mountpoint for S3 cannot rename")

    monkeypatch.setattr(os, "rename", no_rename)
    monkeypatch.setattr(os, "replace", no_rename)
    with contextlib.suppress(Killed):
        exec(compile(PROGRAM, "<download>", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert TOKEN not in out
    return out.splitlines(), fetched


def test_the_download_goes_through_scratch_and_resumes_after_a_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "bucket/models/Model-1B"
    before, fetched = run(tmp_path, monkeypatch, capsys, kill_at="model.safetensors")
    assert fetched == ["config.json"]
    assert before[0] == f"Fetching 3 files from Org/Model-1B@main into {target}"
    assert "download progress: 0% (0/3 files, 0 B of 4.5 kB)" in before
    assert "downloaded config.json (2 B)" in before
    assert sorted(p.name for p in target.rglob("*") if p.is_file()) == ["config.json"]

    # The next pod: a fresh scratch (emptyDir), the same target.
    shutil.rmtree(tmp_path / "scratch")
    after, fetched = run(tmp_path, monkeypatch, capsys)
    assert fetched == ["model.safetensors", "tokenizer/vocab.json"]
    assert f"skipping config.json: already complete in {target}" in after
    assert "resuming: 1 of 3 files (2 B) already downloaded, 2 to fetch" in after
    assert after[-2:] == ["download progress: 100% (3/3 files, 4.5 kB of 4.5 kB)", str(target)]
    assert {str(p.relative_to(target)): p.read_bytes() for p in target.rglob("*.*")} == REPO
    assert not [p for p in (tmp_path / "scratch").rglob("*") if p.is_file()]  # one at a time

    again, fetched = run(tmp_path, monkeypatch, capsys)
    assert fetched == []
    assert "resuming: 3 of 3 files (4.5 kB) already downloaded, 0 to fetch" in again


def test_the_job_runs_the_program_with_its_inputs_in_the_environment() -> None:
    from shared.contracts.workloads import ModelDownloadSpec

    spec = ModelDownloadSpec(name="dl", repo_id="Org/Model-1B", token_secret="hf-token")
    pod = download_job(spec).body["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["command"][-1] == PROGRAM and PROGRAM.startswith(MARKER)
    assert container["command"][:2] == ["/bin/bash", "-c"]
    assert container["command"][2].endswith('exec python -u -c "$1"')
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    assert env["HF_REPO"] == "Org/Model-1B" and env["HF_REVISION"] == "main"
    assert env["HF_TARGET"] == "/s3/models/Model-1B"
    assert env["HF_SCRATCH"].startswith("/scratch/")
    assert env["HF_TOKEN"] == {"secretKeyRef": {"name": "hf-token", "key": "token"}}
    assert {"name": "scratch", "emptyDir": {}} in pod["volumes"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"shared": "/s3", "scratch": "/scratch"}
