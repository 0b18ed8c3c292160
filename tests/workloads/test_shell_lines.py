"""Every shell line workload-svc renders is made from an argument list: whatever text a user puts
in a field, the shell reads it back as one argument, never as a command, a substitution or a
redirection. Checked two ways: `shlex.split` of the line gives back the intended argument list,
and a real bash running the line hands the launcher exactly those arguments."""

from __future__ import annotations

import shlex
import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from shared.contracts.workloads import (
    JobSpec,
    LlamaFactoryRecipe,
    ModelDownloadSpec,
    MsSwiftRecipe,
    PyTorchRecipe,
    VerlRecipe,
    shared_path,
)
from workload_svc.domain.render import download_job, render

SPEC: TypeAdapter[Any] = TypeAdapter(JobSpec)
BASE: dict[str, Any] = {"name": "r", "instance_group": "gpu"}
# A process's arguments cannot hold NUL; anything else may come from a user.
TEXT = st.text().filter(lambda s: "\x00" not in s)
METACHARACTERS = [
    "a; curl evil | sh",
    "$(id)",
    "`id`",
    "a && rm -rf /",
    "a\nb",
    'it\'s "quoted"',
    "x || y > /tmp/out",
    "$HOME ${PATH} *",
    "a\\'b",
    "'",
]
TORCHRUN = [
    "torchrun",
    "--nnodes=$NNODES",
    "--node_rank=$NODE_RANK",
    "--nproc_per_node=$NPROC_PER_NODE",
    "--master_addr=$MASTER_ADDR",
    "--master_port=$MASTER_PORT",
]
RENDEZVOUS = {"NNODES": "2", "NODE_RANK": "0", "NPROC_PER_NODE": "8"}
RENDEZVOUS |= {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "23456"}
# torchrun's options as bash expands them from that environment
RAN = [
    "--nnodes=2",
    "--node_rank=0",
    "--nproc_per_node=8",
    "--master_addr=10.0.0.1",
    "--master_port=23456",
]


def _line(rendered: Any) -> str:
    """The shell line of a rendered job: the RayJob's entrypoint or the container's bash -c."""
    if rendered.kind == "RayJob":
        return str(rendered.body["spec"]["entrypoint"])
    [replica] = rendered.body["spec"]["replicaSpecs"]
    command = replica["template"]["spec"]["containers"][0]["command"]
    assert command[:2] == ["/bin/bash", "-c"] and len(command) == 3
    return str(command[2])


def _bash_argv(line: str, program: str) -> list[str]:
    """What a real bash hands `program` when it runs `line` (the program a function that
    prints its name, FORCE_TORCHRUN and its arguments, NUL-separated)."""
    script = (
        f'{program}() {{ printf "%s\\0" "{program}" "FORCE_TORCHRUN=${{FORCE_TORCHRUN-}}" "$@"; }}\n'
        + line
    )
    out = subprocess.run(
        ["/bin/bash", "-c", script], capture_output=True, check=True, env=RENDEZVOUS
    ).stdout
    return out.decode().split("\x00")[:-1]


# ---- the intended argument lists, written out here (not taken from the renderer) -------------


def pytorch_argv(script: str, args: list[str]) -> list[str]:
    return [*TORCHRUN, script, *args]


SIZES = ["--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "8"]


def llama_factory_argv(model: str, dataset: str, output: str, template: str) -> list[str]:
    return [
        "FORCE_TORCHRUN=1", "llamafactory-cli", "train", "--stage", "sft", "--do_train", "true",
        "--model_name_or_path", model, "--dataset_dir", dataset, "--dataset", "train",
        "--template", template, "--finetuning_type", "lora", "--num_train_epochs", "3",
        "--learning_rate", "0.0001", *SIZES, "--cutoff_len", "2048", "--lora_rank", "8",
        "--output_dir", output, "--report_to", "none", "--logging_steps", "1",
    ]  # fmt: skip


def ms_swift_argv(model: str, dataset: str, output: str) -> list[str]:
    return [
        "swift", "sft", "--model", model, "--dataset", dataset, "--train_type", "lora",
        "--num_train_epochs", "1", "--learning_rate", "0.0001", *SIZES,
        "--max_length", "2048", "--lora_rank", "8", "--output_dir", output,
        "--report_to", "none", "--logging_steps", "1",
    ]  # fmt: skip


def verl_argv(model: str, train: str, val: str, logger: str = '["console"]') -> list[str]:
    return [
        "python3", "-m", "verl.trainer.main_ppo", "algorithm.adv_estimator=grpo",
        f"data.train_files={train}", f"data.val_files={val}",
        f"actor_rollout_ref.model.path={model}", "trainer.nnodes=1", "trainer.n_gpus_per_node=1",
        "trainer.total_epochs=1", "trainer.project_name=hyperpilot",
        "trainer.experiment_name=r", "trainer.default_local_dir=/s3/checkpoints/r",
        f"trainer.logger={logger}",
    ]  # fmt: skip


# ---- VERL: the entrypoint of the RayJob -------------------------------------------------------


def test_verl_renders_the_same_hydra_overrides_as_one_argument_each() -> None:
    spec = SPEC.validate_python(
        {
            "recipe": "verl",
            **BASE,
            "model": "models/Qwen2.5-0.5B",
            "train_files": "datasets/gsm8k/train.parquet",
            "val_files": "/s3/datasets/gsm8k/test.parquet",
        }
    )
    line = _line(render(spec))
    assert line == (
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo"
        " data.train_files=/s3/datasets/gsm8k/train.parquet"
        " data.val_files=/s3/datasets/gsm8k/test.parquet"
        " actor_rollout_ref.model.path=/s3/models/Qwen2.5-0.5B trainer.nnodes=1"
        " trainer.n_gpus_per_node=1 trainer.total_epochs=1 trainer.project_name=hyperpilot"
        " trainer.experiment_name=r trainer.default_local_dir=/s3/checkpoints/r"
        """ 'trainer.logger=["console"]'"""
    )
    tracked = spec.model_copy(update={"mlflow_tracking_uri": "http://mlflow:5000"})
    assert shlex.split(_line(render(tracked)))[-1] == 'trainer.logger=["console","mlflow"]'


@pytest.mark.parametrize("field", ["model", "train_files", "val_files"])
@pytest.mark.parametrize("value", METACHARACTERS)
def test_verl_refuses_paths_with_shell_or_hydra_syntax(field: str, value: str) -> None:
    fields = {"model": "models/m", "train_files": "d/train.parquet", "val_files": "d/val.parquet"}
    with pytest.raises(ValidationError) as refused:
        SPEC.validate_python({"recipe": "verl", **BASE, **fields, field: value})
    [error] = refused.value.errors()
    assert error["loc"] == ("verl", field) and "Hydra overrides would read" in error["msg"]
    assert "letters, digits" in error["ctx"]["error"].hint


@pytest.mark.parametrize("value", METACHARACTERS)
def test_verl_metacharacters_stay_inside_their_argument(value: str) -> None:
    # Past the contract's refusal too: the renderer alone keeps them inert.
    spec = VerlRecipe.model_construct(
        **BASE, model=f"/s3/m {value}", train_files=value, val_files=f"{value}/v"
    )
    line = _line(render(spec))
    intended = verl_argv(f"/s3/m {value}", value, f"{value}/v")
    assert shlex.split(line) == intended
    assert _bash_argv(line, "python3") == ["python3", "FORCE_TORCHRUN=", *intended[1:]]


@given(model=TEXT, train=TEXT, val=TEXT)
def test_verl_entrypoint_splits_back_into_its_arguments(model: str, train: str, val: str) -> None:
    spec = VerlRecipe.model_construct(**BASE, model=model, train_files=train, val_files=val)
    assert shlex.split(_line(render(spec))) == verl_argv(model, train, val)


# ---- PyTorch, LLaMA-Factory, MS-Swift: bash -c on every node ----------------------------------


@pytest.mark.parametrize("value", METACHARACTERS)
def test_pytorch_script_and_args_stay_inside_their_argument(value: str) -> None:
    # The contract takes these (a path in the bucket may hold them; args are free text).
    spec = SPEC.validate_python(
        {"recipe": "pytorch", **BASE, "script": f"code/{value}", "args": [value, "--lr", value]}
    )
    line = _line(render(spec))
    intended = pytorch_argv(shared_path(f"code/{value}", "script"), [value, "--lr", value])
    assert shlex.split(line) == intended
    assert _bash_argv(line, "torchrun") == ["torchrun", "FORCE_TORCHRUN=", *RAN, *intended[6:]]


@pytest.mark.parametrize("recipe", ["llama-factory", "ms-swift"])
@pytest.mark.parametrize("value", METACHARACTERS)
def test_fine_tuning_paths_stay_inside_their_argument(recipe: str, value: str) -> None:
    spec = SPEC.validate_python(
        {
            "recipe": recipe,
            **BASE,
            "model": f"models/{value}",
            "dataset": f"/s3/{value}",
            "output": f"out/{value}",
        }
    )
    line = _line(render(spec))
    paths = (spec.model, spec.dataset, spec.output)
    assert paths == tuple(
        shared_path(p, "path") for p in (f"models/{value}", f"/s3/{value}", f"out/{value}")
    )
    if recipe == "llama-factory":
        intended = llama_factory_argv(*paths, "qwen")
        assert line.startswith("FORCE_TORCHRUN=1 llamafactory-cli train ")
        ran = _bash_argv(line, "llamafactory-cli")
        assert ran == ["llamafactory-cli", "FORCE_TORCHRUN=1", *intended[2:]]
    else:
        intended = ms_swift_argv(*paths)
        assert _bash_argv(line, "swift") == ["swift", "FORCE_TORCHRUN=", *intended[1:]]
    assert shlex.split(line) == intended


@given(script=TEXT, args=st.lists(TEXT, max_size=6))
def test_pytorch_line_splits_back_into_its_arguments(script: str, args: list[str]) -> None:
    spec = PyTorchRecipe.model_construct(**BASE, script=script, args=args)
    assert shlex.split(_line(render(spec))) == pytorch_argv(script, args)


@given(model=TEXT, dataset=TEXT, output=TEXT, template=TEXT)
def test_llama_factory_line_splits_back_into_its_arguments(
    model: str, dataset: str, output: str, template: str
) -> None:
    spec = LlamaFactoryRecipe.model_construct(
        **BASE, model=model, dataset=dataset, output=output or None, template=template
    )
    intended = llama_factory_argv(model, dataset, output or "/s3/checkpoints/r", template)
    assert shlex.split(_line(render(spec))) == intended


@given(model=TEXT, dataset=TEXT, output=TEXT)
def test_ms_swift_line_splits_back_into_its_arguments(
    model: str, dataset: str, output: str
) -> None:
    spec = MsSwiftRecipe.model_construct(
        **BASE, model=model, dataset=dataset, output=output or None
    )
    intended = ms_swift_argv(model, dataset, output or "/s3/checkpoints/r")
    assert shlex.split(_line(render(spec))) == intended


@settings(max_examples=40, deadline=None)
@given(script=TEXT, args=st.lists(TEXT, max_size=4))
def test_bash_hands_torchrun_exactly_the_arguments(script: str, args: list[str]) -> None:
    spec = PyTorchRecipe.model_construct(**BASE, script=script, args=args)
    ran = _bash_argv(_line(render(spec)), "torchrun")
    assert ran == ["torchrun", "FORCE_TORCHRUN=", *RAN, script, *args]


# ---- the model download Job -------------------------------------------------------------------


def test_the_download_line_is_ours_and_runs_the_program_as_its_argument() -> None:
    spec = ModelDownloadSpec(name="dl", repo_id="Org/Model", target="models/$(id)`id`")
    command = download_job(spec).body["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[2] == "pip install -q 'huggingface_hub[hf_transfer]' && exec python -u -c \"$1\""
    assert shlex.split(command[2]) == [
        "pip", "install", "-q", "huggingface_hub[hf_transfer]", "&&",
        "exec", "python", "-u", "-c", "$1",
    ]  # fmt: skip
    assert "$(id)" not in command[2]  # the target travels in the environment (HF_TARGET)
