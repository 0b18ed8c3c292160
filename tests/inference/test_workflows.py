"""The endpoint workflows with a fake cluster: the first stage decides with the planner's
function and mutates only when actual differs; the wait stage polls to Available."""

from __future__ import annotations

import copy
import time
import uuid
from typing import Any

import pytest

from inference_svc.domain.plan import ClusterFacts
from inference_svc.domain.render import render, scale_target
from inference_svc.domain.status import Observed
from inference_svc.domain.workflows import (
    AVAILABLE_WITHIN,
    assign_workflow,
    delete_workflow,
    deploy_workflow,
    scale_workflow,
)
from shared.contracts.inference import (
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    EndpointSpec,
    EndpointTarget,
    ScaleEndpoint,
)
from shared.errors import PermanentError
from shared.stages import Done, Pending, StageContext, Submitted, Workflow

TYPE = "ml.g5.8xlarge"
KubeObject = dict[str, Any]


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], KubeObject] = {}
        self.calls: list[str] = []

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str
    ) -> KubeObject | None:
        return self.objects.get((kind, name))

    async def apply(self, obj: KubeObject) -> KubeObject:
        self.calls.append(f"apply {obj['kind']}/{obj['metadata']['name']}")
        self.objects[(obj["kind"], obj["metadata"]["name"])] = copy.deepcopy(obj)
        return obj

    async def merge_patch(
        self, api_version: str, kind: str, name: str, namespace: str, patch: KubeObject
    ) -> KubeObject:
        self.calls.append(f"patch {kind}/{name}")
        obj = self.objects[(kind, name)]
        for key, value in patch.items():
            for inner, v in value.items():
                if isinstance(v, dict):
                    obj[key].setdefault(inner, {}).update(v)
                else:
                    obj[key][inner] = v
        return obj

    async def delete(self, api_version: str, kind: str, name: str, namespace: str) -> bool:
        self.calls.append(f"delete {kind}/{name}")
        return self.objects.pop((kind, name), None) is not None


class FakeAccess:
    def __init__(self, spec: EndpointSpec) -> None:
        self.spec = spec
        self.cube = FakeKube()
        self.available = True

    async def kube(self, cluster: str) -> FakeKube:
        return self.cube

    async def facts(self, cluster: str, spec: EndpointSpec) -> ClusterFacts:
        return ClusterFacts(
            cluster=cluster,
            gpus_by_instance_type={TYPE: 1},
            served=frozenset(),
            actual=dict(self.cube.objects),
        )

    async def recorded(self, cluster: str, name: str) -> EndpointSpec:
        return self.spec

    async def present(self, cluster: str, spec: EndpointSpec) -> list[KubeObject]:
        return [o for o in render(spec) if (o["kind"], o["metadata"]["name"]) in self.cube.objects]

    async def scale_object(self, cluster: str, spec: EndpointSpec) -> KubeObject | None:
        _, kind, name = scale_target(spec)
        return self.cube.objects.get((kind, name))

    async def observe(self, cluster: str, spec: EndpointSpec) -> Observed:
        if self.available:
            return Observed("available", spec.replicas, spec.replicas)
        return Observed("deploying", spec.replicas, 0, message="0/1 replicas available")


async def run(workflow: Workflow, command: dict[str, Any]) -> dict[str, Done]:
    outputs: dict[str, dict[str, Any]] = {}
    results: dict[str, Done] = {}

    async def report(message: str) -> None:
        return None

    assert workflow.command is not None
    parsed = workflow.command.from_payload(command)
    for stage in workflow.stages:
        ctx = StageContext(uuid.uuid4(), stage.name, command, outputs, None, {}, report, parsed)
        step = await stage.run(ctx)
        if isinstance(step, Submitted):
            assert stage.poll is not None
            polled = await stage.poll(ctx)
            assert isinstance(polled, Done), polled
            step = polled
        assert isinstance(step, Done)
        results[stage.name] = step
        outputs[stage.name] = step.outputs
    return results


def make(**overrides: Any) -> EndpointSpec:
    body: dict[str, Any] = {
        "name": "chat",
        "instance_type": TYPE,
        "gpus": 1,
        "container": {"engine": "vllm", "model": "m"},
    }
    return EndpointSpec.model_validate(body | overrides)


def deploy(spec: EndpointSpec) -> dict[str, Any]:
    return DeployEndpoint(cluster="c1", spec=spec).model_dump(mode="json")


async def test_deploy_applies_then_a_second_deploy_is_a_noop_without_calls() -> None:
    access = FakeAccess(make())
    results = await run(deploy_workflow(access), deploy(access.spec))
    assert not results["apply"].noop and not results["available"].noop
    assert access.cube.calls == ["apply Deployment/chat", "apply Service/chat"]
    access.cube.calls.clear()
    again = await run(deploy_workflow(access), deploy(access.spec))
    assert again["apply"].noop and again["available"].noop
    assert access.cube.calls == []


async def test_deploy_refuses_a_rule_before_any_call() -> None:
    access = FakeAccess(make(instance_type="ml.p5.48xlarge"))
    with pytest.raises(PermanentError) as info:
        await run(deploy_workflow(access), deploy(access.spec))
    assert info.value.message.startswith("instance_type: ")
    assert access.cube.calls == []


async def test_the_wait_stage_polls_until_available() -> None:
    access = FakeAccess(make())
    access.available = False
    workflow = deploy_workflow(access)
    wait = workflow.stages[1]
    command = deploy(access.spec)
    ctx = StageContext(
        uuid.uuid4(),
        "available",
        command,
        {"apply": {"noop": False}},
        None,
        {},
        _quiet,
        DeployEndpoint.from_payload(command),
    )
    assert isinstance(await wait.run(ctx), Submitted)
    assert wait.poll is not None
    assert isinstance(await wait.poll(ctx), Pending)
    access.available = True
    assert isinstance(await wait.poll(ctx), Done)


async def test_an_endpoint_that_never_becomes_available_fails_with_what_its_pods_say() -> None:
    access = FakeAccess(make())
    access.available = False
    wait = deploy_workflow(access).stages[1]
    assert wait.poll is not None
    stale = time.time() - AVAILABLE_WITHIN - 1
    command = deploy(access.spec)
    ctx = StageContext(
        uuid.uuid4(),
        "available",
        command,
        {},
        "x",
        {"since": stale},
        _quiet,
        DeployEndpoint.from_payload(command),
    )
    with pytest.raises(PermanentError) as info:
        await wait.poll(ctx)
    assert info.value.code == "EndpointNotAvailable" and "0/1 replicas" in info.value.message


async def _quiet(message: str) -> None:
    return None


async def test_scale_patches_replicas_once() -> None:
    access = FakeAccess(make())
    await run(deploy_workflow(access), deploy(access.spec))
    access.cube.calls.clear()
    target = EndpointTarget(cluster="c1", name="chat")
    command = ScaleEndpoint(target=target, replicas=2).model_dump(mode="json")
    results = await run(scale_workflow(access), command)
    assert access.cube.calls == ["patch Deployment/chat"]
    assert results["apply"].outputs["previous"] == 1
    access.cube.calls.clear()
    again = await run(scale_workflow(access), command)
    assert again["apply"].noop and access.cube.calls == []


async def test_assign_relabels_the_pod_and_makes_the_service_once() -> None:
    access = FakeAccess(make(service="model_pool"))
    access.cube.objects[("Pod", "w1")] = {
        "metadata": {
            "name": "w1",
            "uid": "u1",
            "labels": {"hyperpilot.dev/pool": "chat", "hyperpilot.dev/model": "unassigned"},
        }
    }
    target = EndpointTarget(cluster="c1", name="chat")
    command = AssignPoolWorker(target=target, pod="w1", model="qwen").model_dump(mode="json")
    results = await run(assign_workflow(access), command)
    assert access.cube.calls == ["patch Pod/w1", "apply Service/chat-qwen"]
    assert results["assign"].outputs["previous"] == "unassigned"
    assert (
        access.cube.objects[("Pod", "w1")]["metadata"]["labels"]["hyperpilot.dev/model"] == "qwen"
    )
    access.cube.calls.clear()
    again = await run(assign_workflow(access), command)
    assert again["assign"].noop and access.cube.calls == []


async def test_delete_removes_what_exists_and_then_is_a_noop() -> None:
    access = FakeAccess(make())
    await run(deploy_workflow(access), deploy(access.spec))
    access.cube.calls.clear()
    command = DeleteEndpoint(target=EndpointTarget(cluster="c1", name="chat")).model_dump(
        mode="json"
    )
    await run(delete_workflow(access), command)
    assert access.cube.calls == ["delete Service/chat", "delete Deployment/chat"]
    access.cube.calls.clear()
    assert (await run(delete_workflow(access), command))["delete"].noop
    assert access.cube.calls == []
