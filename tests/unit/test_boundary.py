"""The validated constructors every user value goes through on its way out."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.boundary import (
    confined_subpath,
    dns_label,
    model_id,
    namespace,
    object_name,
    path_segment,
    shell_line,
    shell_script,
    url_path,
)
from shared.validation import RuleViolation

INVOKE = ("/v1/chat/completions", "/v1/completions")
TRAVERSALS = [
    "../../apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "/v1/chat/completions/../../../../apis",
    "/v1/chat/completions/%2e%2e/%2e%2e/apis",
    "/v1/chat/completions%2F..%2F..%2Fapis",
    "/v1/chat/completions/%252e%252e/apis",
    "\\v1\\chat\\completions",
    "/v1/chat/completions\\..\\..",
    "http://evil.example/v1/chat/completions",
    "//evil.example/v1/chat/completions",
    "/v1/chat/completions?x=/apis",
    "/v1/chat/completions#frag",
    "/v1/chat/completions\x00",
    "v1/chat/completions",
    "/apis/v1",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_a_sub_path_cannot_climb_out(path: str) -> None:
    with pytest.raises(RuleViolation) as refused:
        confined_subpath(path, INVOKE, "path")
    assert str(refused.value).startswith("path ")


def test_an_allowed_sub_path_is_kept() -> None:
    assert confined_subpath("/v1/chat/completions", INVOKE) == "/v1/chat/completions"
    assert confined_subpath("/v1/completions/", INVOKE) == "/v1/completions"


@pytest.mark.parametrize(
    "value", ["x/../../apis", "..", "a%2Fb", "a\\b", "http://x", "a b", "a?x=", "a#b", ""]
)
def test_a_model_id_is_a_plain_id(value: str) -> None:
    with pytest.raises(RuleViolation):
        model_id(value, "model")


@pytest.mark.parametrize("value", ["Qwen/Qwen3-0.6B", "llama3", "meta-llama/Llama-3.1-8B"])
def test_model_ids(value: str) -> None:
    assert model_id(value, "model") == value


@pytest.mark.parametrize("value", ["kube-system", "kube-public", "kube-anything", "keda"])
def test_reserved_namespaces_are_refused(value: str) -> None:
    with pytest.raises(RuleViolation) as refused:
        namespace(value)
    assert "reserved" in str(refused.value) and "kube-system" in refused.value.hint


def test_names_are_dns_labels() -> None:
    assert dns_label("team-a", "namespace") == "team-a"
    assert object_name("pool", "qwen3", field="model") == "pool-qwen3"
    for bad in ("Team", "a_b", "-a", "a" * 64, "a/b", "a.b"):
        with pytest.raises(RuleViolation):
            dns_label(bad, "name")
    with pytest.raises(RuleViolation):
        object_name("pool", "x/../../apis", field="model")


@given(st.text())
def test_a_path_segment_never_holds_a_separator(value: str) -> None:
    try:
        encoded = path_segment(value, "name")
    except RuleViolation:
        return
    assert "/" not in encoded and "?" not in encoded and "#" not in encoded
    assert encoded not in ("", ".", "..")


def test_url_path_encodes_each_segment() -> None:
    assert url_path("api", "v1", "namespaces", "a b", "services") == (
        "/api/v1/namespaces/a%20b/services"
    )
    with pytest.raises(RuleViolation):
        url_path("api", "..", "apis")


@given(st.lists(st.text(), max_size=8))
def test_a_shell_line_splits_back_into_its_arguments(argv: list[str]) -> None:
    argv = [a for a in argv if "\x00" not in a]
    assert shlex.split(shell_line(argv)) == argv


def test_a_script_joins_quoted_commands() -> None:
    script = shell_script(["echo", "a; rm -rf /"], ["ls", "$(id)"])
    assert script == "echo 'a; rm -rf /' && ls '$(id)'"
    with pytest.raises(ValueError):
        shell_script(["a"], joiner=" | sh ")
