"""An invoke's user values never reach the API server's URL unchecked: the `model` of a pool's
request names its per-model Service only through `pool_model` (the same function that gives a
worker its model label), the sub-path is one of the inference paths, and the service-proxy URL
is a fixed template of segments the client encodes one by one. Traversal payloads (`../`,
escapes, backslashes, absolute URLs, queries, fragments, NUL) are refused on the field they came
in, before anything is sent."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from kubernetes import client as k8s

from gateway.errors import ApiError
from gateway.routes.endpoints import _checked_model
from inference_svc.adapters.k8s import InferenceKube, ProxyAnswer, proxy_path
from inference_svc.domain.plan import assign_plan
from inference_svc.domain.render import (
    INVOKE_PATHS,
    MODEL_LABEL,
    POOL_LABEL,
    pool_model,
    pool_service,
    service_name,
)
from inference_svc.queries import INVOKE, Reads
from shared.contracts.inference import EndpointSpec
from shared.errors import PermanentError
from shared.queries import BadRequest, QueryResponder
from shared.validation import RuleViolation

FORGERY = "x/../../../../../../apis/rbac.authorization.k8s.io/v1/clusterrolebindings?x="
# Payloads a model id refuses, whichever endpoint the request is for.
BAD_MODELS = [
    FORGERY,
    "../../../../api/v1/namespaces/kube-system/pods?x=",
    "..",
    "qwen/..",
    "%2e%2e",
    "%2e%2e/%2e%2e/apis",
    "..%2F..%2Fapis",
    "qwen%2Fx",
    "%252e%252e",
    "qwen\\..\\x",
    "http://evil/",
    "//evil/x",
    "qwen?x=",
    "qwen#x",
    "qwen\x00",
    "a/b/c",
    "",
]
# Model ids that are fine in an OpenAI request but name no Service of a pool.
NOT_POOL_MODELS = ["Qwen/Qwen3-0.6B", "Qwen3", "llama3.1", "a_b", "a" * 60, "unassigned"]
BAD_PATHS = [
    "/v1/chat/completions/../../../../apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "/v1/chat/completions/%2e%2e/%2e%2e",
    "/v1/chat%2Fcompletions",
    "/v1/%252e%252e/x",
    "/v1/chat/completions?x=",
    "/v1/chat/completions#x",
    "\\v1\\chat\\completions",
    "/v1/chat/completions\x00",
    "http://evil/v1/chat/completions",
    "//evil/v1/chat/completions",
    "v1/chat/completions",
    "/api/v1/namespaces/kube-system/pods",
]


def make(service: str = "model_pool", namespace: str = "default") -> EndpointSpec:
    return EndpointSpec.model_validate(
        {
            "name": "chat",
            "namespace": namespace,
            "instance_type": "ml.g5.8xlarge",
            "gpus": 1,
            "service": service,
            "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
        }
    )


# ---- the names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model", BAD_MODELS + NOT_POOL_MODELS)
def test_a_pool_model_that_names_no_service_is_refused_on_model(model: str) -> None:
    with pytest.raises(RuleViolation) as refused:
        service_name(make(), model)
    assert str(refused.value).startswith("model ") and refused.value.hint
    with pytest.raises(RuleViolation):
        pool_service(make(), model)


def test_the_label_and_the_service_of_a_model_come_from_one_function() -> None:
    spec = make()
    names = pool_model(spec, "qwen3")
    assert names == ("qwen3", "chat-qwen3")
    assert service_name(spec, "qwen3") == names.service
    service = pool_service(spec, "qwen3")
    assert service["metadata"]["name"] == names.service
    assert service["spec"]["selector"] == {POOL_LABEL: "chat", MODEL_LABEL: names.label}
    pod = {"metadata": {"name": "w-1", "labels": {POOL_LABEL: "chat", MODEL_LABEL: "unassigned"}}}
    plan = assign_plan(spec, "c1", pod, "qwen3", service_exists=False)
    assert plan.objects[0].body == {"metadata": {"labels": {MODEL_LABEL: names.label}}}
    assert plan.objects[1].name == names.service
    # Endpoints other than a pool keep their one Service, whatever the request's model.
    assert service_name(make("internal"), "Qwen/Qwen3-0.6B") == "chat"


@pytest.mark.parametrize("model", ["llama3.1", "Qwen/Qwen3-0.6B", "unassigned", FORGERY])
def test_assigning_a_model_that_names_no_service_is_a_rule_on_model(model: str) -> None:
    pod = {"metadata": {"name": "w-1", "labels": {POOL_LABEL: "chat", MODEL_LABEL: "unassigned"}}}
    with pytest.raises(PermanentError) as refused:
        assign_plan(make(), "c1", pod, model, service_exists=False)
    assert refused.value.code == "InvalidEndpoint"
    assert refused.value.message.startswith("model: ") and refused.value.hint


# ---- the proxy URL -----------------------------------------------------------------------------


class Raw:
    status = 200
    headers = {"Content-Type": "application/json"}

    def read(self) -> bytes:
        return b'{"ok": true}'


@pytest.fixture
def kube(tmp_path: Any) -> InferenceKube:
    api = k8s.ApiClient(k8s.Configuration(host="https://kube.example"))
    sent: list[str] = []

    def call_api(method: str, url: str, **_: Any) -> Raw:
        sent.append(f"{method} {url}")
        return Raw()

    api.call_api = call_api  # type: ignore[method-assign,assignment]
    found = InferenceKube(api)
    found.sent = sent  # type: ignore[attr-defined]
    return found


async def test_the_proxy_url_of_a_pool_model_is_exactly_its_encoded_segments(
    kube: InferenceKube,
) -> None:
    service = service_name(make(), "qwen3")
    answer = await kube.proxy("team-a", service, 8000, "/v1/chat/completions", b'{"model": "q"}')
    assert answer == ProxyAnswer(200, b'{"ok": true}', "application/json")
    assert kube.sent == [  # type: ignore[attr-defined]
        "POST https://kube.example/api/v1/namespaces/team-a/services/chat-qwen3%3A8000/proxy"
        "/v1/chat/completions"
    ]
    template, params = proxy_path("team-a", service, 8000, "/invocations")
    assert template == "/api/v1/namespaces/{namespace}/services/{service}/proxy/{p0}"
    assert params == {"namespace": "team-a", "service": "chat-qwen3:8000", "p0": "invocations"}


@pytest.mark.parametrize("path", BAD_PATHS)
async def test_the_proxy_refuses_a_path_outside_the_inference_paths(
    kube: InferenceKube, path: str
) -> None:
    with pytest.raises(RuleViolation) as refused:
        await kube.proxy("default", "chat", 8000, path, b"{}")
    assert str(refused.value).startswith("path ")
    assert kube.sent == []  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("namespace", "service", "port", "field"),
    [
        ("kube-system", "chat", 8000, "namespace"),
        ("default/../kube-system", "chat", 8000, "namespace"),
        ("default", f"chat-{FORGERY}", 8000, "service"),
        ("default", "chat-%2e%2e", 8000, "service"),
        ("default", "chat:9000", 8000, "service"),
        ("default", "chat", 0, "port"),
    ],
)
async def test_the_proxy_refuses_a_namespace_service_or_port_that_is_not_one(
    kube: InferenceKube, namespace: str, service: str, port: int, field: str
) -> None:
    with pytest.raises(RuleViolation) as refused:
        await kube.proxy(namespace, service, port, "/v1/chat/completions", b"{}")
    assert str(refused.value).startswith(field + " ")
    assert kube.sent == []  # type: ignore[attr-defined]


def test_every_inference_path_is_a_proxy_path() -> None:
    for path in INVOKE_PATHS:
        template, params = proxy_path("default", "chat", 8000, path)
        assert [params[f"p{i}"] for i in range(template.count("{p"))] == path.strip("/").split("/")


# ---- the invoke query --------------------------------------------------------------------------


class FakeKube:
    def __init__(self) -> None:
        self.proxied: list[tuple[str, str, int, str]] = []

    async def proxy(
        self, namespace: str, service: str, port: int, path: str, body: bytes
    ) -> ProxyAnswer:
        self.proxied.append((namespace, service, port, path))
        return ProxyAnswer(200, b'{"object": "chat.completion"}', "application/json")


class FakeClusters:
    def __init__(self, spec: EndpointSpec) -> None:
        self.spec = spec
        self.cube = FakeKube()

    async def recorded(self, cluster: str, name: str) -> EndpointSpec:
        return self.spec

    async def kube(self, cluster: str) -> FakeKube:
        return self.cube


def responder(spec: EndpointSpec) -> tuple[Reads, FakeKube]:
    clusters = FakeClusters(spec)
    return Reads(clusters), clusters.cube  # type: ignore[arg-type]


def invoke(model: Any, path: str = "/v1/chat/completions") -> dict[str, Any]:
    return {"cluster": "c1", "name": "chat", "path": path, "body": {"model": model}}


async def test_a_pool_invoke_reaches_the_model_service() -> None:
    answer, kube = responder(make())
    reply = await answer.invoke(invoke("qwen3"))
    assert reply == {"status": 200, "body": {"object": "chat.completion"}, "service": "chat-qwen3"}
    assert kube.proxied == [("default", "chat-qwen3", 8000, "/v1/chat/completions")]


@pytest.mark.parametrize("model", BAD_MODELS + NOT_POOL_MODELS + [None, 7])
async def test_a_pool_invoke_with_a_model_that_names_no_service_sends_nothing(model: Any) -> None:
    answer, kube = responder(make())
    with pytest.raises(PermanentError) as refused:
        await answer.invoke(invoke(model))
    assert refused.value.code == "InvalidEndpoint"
    assert refused.value.message.startswith("model: ") and refused.value.hint
    assert kube.proxied == []


async def test_the_refusal_reply_names_the_field_for_the_gateway() -> None:
    reads, kube = responder(make())
    answer = QueryResponder(None, reads.routes(), "inference-svc")  # type: ignore[arg-type]
    reply = orjson.loads(orjson.dumps(await answer.answer(INVOKE, orjson.dumps(invoke(FORGERY)))))
    assert reply["ok"] is False
    assert reply["error"]["code"] == "InvalidEndpoint"
    assert reply["error"]["message"].startswith("model: ") and reply["error"]["hint"]
    assert kube.proxied == []


@pytest.mark.parametrize("path", BAD_PATHS)
async def test_an_invoke_path_other_than_an_inference_path_sends_nothing(path: str) -> None:
    for spec in (make(), make("internal")):
        answer, kube = responder(spec)
        with pytest.raises(BadRequest) as refused:
            await answer.invoke(invoke("qwen3", path))
        assert refused.value.message.startswith("path ") and refused.value.hint
        assert kube.proxied == []


# ---- the gateway's check ---------------------------------------------------------------------


@pytest.mark.parametrize("model", [m for m in BAD_MODELS if m] + [7, ["qwen"], {"a": 1}])
def test_the_gateway_refuses_a_model_that_is_not_a_model_id(model: Any) -> None:
    with pytest.raises(ApiError) as refused:
        _checked_model({"model": model, "messages": []})
    body = refused.value.body()["error"]
    assert refused.value.status == 422 and body["code"] == "validation_error"
    (field,) = body["fields"]
    assert field["field"] == "model" and field["rule"] in ("model_id", "string_type")
    assert field["hint"]


@pytest.mark.parametrize("model", ["Qwen/Qwen3-0.6B", "qwen3", "meta-llama/Llama-3.1-8B", None])
def test_the_gateway_lets_a_model_id_through(model: Any) -> None:
    _checked_model({"model": model} if model is not None else {})
