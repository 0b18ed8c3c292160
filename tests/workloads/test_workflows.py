"""The job workflows with a fake cluster: the check decides, apply acts only when needed."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from shared.contracts.workloads import CancelJob, DeleteJob, SubmitJob
from shared.errors import PermanentError
from shared.stages import Done, StageContext, Workflow
from workload_svc.domain.plan import ClusterFacts, GroupFacts
from workload_svc.domain.render import render
from workload_svc.domain.workflows import cancel_workflow, delete_workflow, submit_workflow


class FakeCluster:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []
        self.secrets: dict[str, dict[str, str]] = {}
        self.annotations: dict[str, dict[str, str]] = {}

    async def facts(
        self,
        cluster: str,
        api_version: str,
        kind: str,
        name: str,
        group: str | None,
        secrets: Sequence[str] = (),
        elastic: bool = False,
        namespace: str = "default",
        team: str | None = None,
        priority: str | None = None,
    ) -> ClusterFacts:
        return ClusterFacts(
            groups={"gpu": GroupFacts("gpu", "ml.g5.8xlarge", 2, 1, 1)},
            storage=True,
            kinds=frozenset({"HyperPodPyTorchJob", "RayJob"}),
            existing=self.objects.get(name),
            missing_secrets=frozenset(s for s in secrets if s not in self.secrets),
        )

    async def put_secret(
        self,
        cluster: str,
        name: str,
        data: dict[str, str],
        annotations: dict[str, str],
        namespace: str = "default",
    ) -> None:
        self.calls.append(f"put secret {name}")
        self.secrets[name] = dict(data)
        self.annotations[name] = dict(annotations)

    async def apply(self, cluster: str, obj: dict[str, Any]) -> None:
        self.calls.append(f"apply {obj['metadata']['name']}")
        self.objects[obj["metadata"]["name"]] = obj

    async def delete(
        self, cluster: str, api_version: str, kind: str, name: str, namespace: str = "default"
    ) -> bool:
        self.calls.append(f"delete {name}")
        return self.objects.pop(name, None) is not None

    async def recorded(self, cluster: str, name: str) -> dict[str, Any] | None:
        return self.jobs.get(name)


async def run(workflow: Workflow, command: dict[str, Any]) -> dict[str, Done]:
    outputs: dict[str, dict[str, Any]] = {}
    results: dict[str, Done] = {}

    async def report(message: str) -> None:
        return None

    assert workflow.command is not None
    parsed = workflow.command.from_payload(command)
    for stage in workflow.stages:
        ctx = StageContext(uuid.uuid4(), stage.name, command, outputs, None, {}, report, parsed)
        done = await stage.run(ctx)
        assert isinstance(done, Done)
        results[stage.name] = done
        outputs[stage.name] = done.outputs
    return results


def submit() -> dict[str, Any]:
    spec = {"recipe": "pytorch", "name": "j", "instance_group": "gpu", "script": "t.py"}
    return SubmitJob(cluster="c", region="us-east-1", spec=spec).model_dump(mode="json")


async def test_submit_applies_once_then_is_a_noop() -> None:
    cluster = FakeCluster()
    workflow = submit_workflow(cluster, SubmitJob.kind())
    first = await run(workflow, submit())
    assert not first["apply"].noop and cluster.calls == ["apply j"]
    second = await run(workflow, submit())
    assert second["check"].noop and second["apply"].noop
    assert cluster.calls == ["apply j"]  # no mutating call the second time


async def test_submit_refused_by_a_rule_makes_no_call() -> None:
    cluster = FakeCluster()
    command = submit()
    command["spec"]["resources"] = {"gpus": 2, "efa": 0}
    with pytest.raises(PermanentError, match=r"resources\.gpus"):
        await run(submit_workflow(cluster, SubmitJob.kind()), command)
    assert cluster.calls == []


async def test_cancel_and_delete() -> None:
    cluster = FakeCluster()
    await run(submit_workflow(cluster, SubmitJob.kind()), submit())
    rendered = render(SubmitJob.from_payload(submit()).spec)
    cluster.jobs["j"] = {
        "status": "running",
        "api_version": rendered.api_version,
        "kind": rendered.kind,
    }
    cancel = CancelJob(cluster="c", name="j").model_dump(mode="json")
    done = await run(cancel_workflow(cluster), cancel)
    assert done["stop"].outputs == {"deleted": True} and "j" not in cluster.objects
    cluster.jobs["j"]["status"] = "cancelled"
    again = await run(cancel_workflow(cluster), cancel)
    assert again["stop"].noop
    removed = await run(
        delete_workflow(cluster), DeleteJob(cluster="c", name="j").model_dump(mode="json")
    )
    assert removed["remove"].outputs == {"deleted": False}
    cluster.jobs.clear()
    gone = await run(
        delete_workflow(cluster), DeleteJob(cluster="c", name="j").model_dump(mode="json")
    )
    assert gone["remove"].noop
    with pytest.raises(PermanentError, match="not known"):
        await run(cancel_workflow(cluster), cancel)
