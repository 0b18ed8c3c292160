"""Diagnostics reads: events, pods and log tails shaped from Kubernetes objects (pure); the label
selector rule; workload-svc's `kube_events`, `pods`, `pod_logs` and the job log's `previous`
answered over its query router with a fake cluster."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from shared.contracts.diagnostics import check_label_selector
from shared.errors import PermanentError
from shared.queries import QueryResponder
from shared.validation import RuleViolation
from workload_svc.bootstrap import SERVICE
from workload_svc.domain import diagnostics
from workload_svc.queries import JOB, KUBE_EVENTS, LOGS, POD_LOGS, PODS, Reads


def _event(name: str, last: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": last},
        "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": "default"},
        "reason": "BackOff",
        "message": f"{name} happened",
        "type": "Warning",
        "count": 2,
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": last,
        "source": {"component": "kubelet", "host": "node-1"},
        **extra,
    }


def _container(name: str, **status: Any) -> dict[str, Any]:
    return {"name": name, "image": f"{name}:1", "ready": False, "restartCount": 0, **status}


def _pod(name: str, statuses: list[dict[str, Any]], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"kind": "Job", "name": "owner", "controller": True}],
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": s["name"]} for s in statuses]},
        "status": {"phase": "Running", "containerStatuses": statuses, **status},
    }


# ---- events ------------------------------------------------------------------------------


def test_events_are_the_newest_limit_newest_last_with_plain_fields() -> None:
    events = [
        _event("c", "2026-01-01T00:00:03Z"),
        _event("a", "2026-01-01T00:00:01Z"),
        _event("b", "2026-01-01T00:00:02+00:00"),
        # a new-style event: no lastTimestamp, a series and an eventTime
        _event(
            "d",
            None,
            eventTime="2026-01-01T00:00:00.5Z",
            series={"count": 7, "lastObservedTime": "2026-01-01T00:00:04Z"},
            count=None,
            source={},
            reportingComponent="hyperpod-training-operator",
        ),
    ]
    newest = diagnostics.newest_events(events, 3)
    assert [e["message"] for e in newest] == ["b happened", "c happened", "d happened"]
    assert newest[0] == {
        "type": "Warning",
        "reason": "BackOff",
        "message": "b happened",
        "object": {"kind": "Pod", "name": "web-0", "namespace": "default"},
        "count": 2,
        "first_timestamp": "2026-01-01T00:00:00Z",
        "last_timestamp": "2026-01-01T00:00:02+00:00",
        "source": "kubelet",
    }
    assert newest[-1]["count"] == 7 and newest[-1]["source"] == "hyperpod-training-operator"
    assert newest[-1]["last_timestamp"] == "2026-01-01T00:00:04Z"
    assert diagnostics.newest_events(events, 0) == []


def test_the_field_selector_names_the_object_and_the_type() -> None:
    assert diagnostics.field_selector(None, None, None) is None
    assert diagnostics.field_selector("Pod", "web-0", "Warning") == (
        "involvedObject.kind=Pod,involvedObject.name=web-0,type=Warning"
    )
    assert diagnostics.field_selector(None, "n1", None) == "involvedObject.name=n1"


# ---- pods --------------------------------------------------------------------------------


def test_a_crash_looping_container_shows_the_back_off_and_its_last_termination() -> None:
    pod = _pod(
        "train-0",
        [
            _container(
                "trainer",
                restartCount=3,
                state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                lastState={
                    "terminated": {
                        "reason": "OOMKilled",
                        "exitCode": 137,
                        "startedAt": "2026-01-01T00:00:01Z",
                        "finishedAt": "2026-01-01T00:00:09Z",
                    }
                },
            ),
            _container(
                "sidecar",
                ready=True,
                state={"running": {"startedAt": "2026-01-01T00:00:00Z"}},
            ),
        ],
    )
    view = diagnostics.pod_view(pod)
    assert view["status"] == "CrashLoopBackOff"
    assert (view["ready"], view["restarts"], view["node"]) == ("1/2", 3, "node-1")
    assert view["owner"] == {"kind": "Job", "name": "owner"}
    trainer = view["containers"][0]
    assert (trainer["state"], trainer["reason"], trainer["restart_count"]) == (
        "waiting",
        "CrashLoopBackOff",
        3,
    )
    assert trainer["last_termination"]["reason"] == "OOMKilled"
    assert trainer["last_termination"]["exit_code"] == 137
    assert trainer["last_termination"]["finished_at"] == "2026-01-01T00:00:09Z"
    sidecar = view["containers"][1]
    assert sidecar["state"] == "running" and sidecar["last_termination"] is None


@pytest.mark.parametrize(
    ("statuses", "extra", "expected"),
    [
        ([_container("a", state={"waiting": {"reason": "ImagePullBackOff"}})], {}, "ImagePullBackOff"),
        ([_container("a", state={"terminated": {"reason": "OOMKilled", "exitCode": 137}})], {}, "OOMKilled"),
        ([_container("a", state={"terminated": {"exitCode": 3}})], {}, "ExitCode:3"),
        ([_container("a", state={"terminated": {"signal": 9, "exitCode": 137}})], {}, "Signal:9"),
        ([_container("a", ready=True, state={"running": {}})], {}, "Running"),
        ([], {"phase": "Pending"}, "Pending"),
        ([], {"phase": "Failed", "reason": "Evicted"}, "Evicted"),
        (
            [_container("a", state={"waiting": {"reason": "PodInitializing"}})],
            {"initContainerStatuses": [_container("init", state={"waiting": {"reason": "CrashLoopBackOff"}})]},
            "Init:CrashLoopBackOff",
        ),
        (
            [_container("a", state={"waiting": {"reason": "PodInitializing"}})],
            {"initContainerStatuses": [_container("init", state={"running": {}})]},
            "Init:0/0",
        ),
    ],
)  # fmt: skip
def test_the_status_is_what_kubectl_shows(
    statuses: list[dict[str, Any]], extra: dict[str, Any], expected: str
) -> None:
    assert diagnostics.pod_status(_pod("p", statuses, **extra)) == expected


def test_a_terminating_pod_and_a_pod_not_reported_yet() -> None:
    pod = _pod("p", [_container("a", ready=True, state={"running": {}})])
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    assert diagnostics.pod_status(pod) == "Terminating"
    fresh = {
        "metadata": {"name": "new", "namespace": "ns"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
        "status": {"phase": "Pending"},
    }
    view = diagnostics.pod_view(fresh)
    assert view["status"] == "Pending" and view["ready"] == "0/1" and view["node"] is None
    assert view["containers"][0]["name"] == "app" and view["containers"][0]["state"] is None


def test_pods_are_listed_by_namespace_then_name() -> None:
    pods = [_pod("b", []), _pod("a", [])]
    pods[0]["metadata"]["namespace"] = "alpha"
    assert [(p["namespace"], p["name"]) for p in diagnostics.pod_views(pods)] == [
        ("alpha", "b"),
        ("default", "a"),
    ]


# ---- logs --------------------------------------------------------------------------------


def test_the_default_container_and_whether_a_previous_instance_exists() -> None:
    pod = _pod("p", [_container("a", restartCount=2), _container("b")])
    assert diagnostics.default_container(pod) == "a"
    pod["metadata"]["annotations"] = {"kubectl.kubernetes.io/default-container": "b"}
    assert diagnostics.default_container(pod) == "b"
    assert diagnostics.has_previous(pod, "a") and not diagnostics.has_previous(pod, "b")
    assert not diagnostics.has_previous(pod, "missing")


def test_a_tail_keeps_the_last_lines_within_the_byte_bound() -> None:
    text = "".join(f"line {i}\n" for i in range(10))
    assert diagnostics.tail_lines(text, 3, 1000) == (["line 7", "line 8", "line 9"], False)
    assert diagnostics.tail_lines(text, 3, 14) == (["line 8", "line 9"], True)
    assert diagnostics.tail_lines("", 5, 100) == ([], False)


# ---- the label selector rule --------------------------------------------------------------


@pytest.mark.parametrize(
    "selector",
    [
        "",
        "app=web",
        "app==web,tier!=db",
        "app.kubernetes.io/name=x",
        "tier in (api, worker),!canary,env",
        "hyperpilot.dev/job=llama-sft",
        "app notin (a),version=",
    ],
)
def test_label_selectors_the_api_server_accepts(selector: str) -> None:
    assert check_label_selector(selector) == selector


@pytest.mark.parametrize(
    ("selector", "says"),
    [
        ("app in (", "parenthesis open"),
        ("app)", "never opened"),
        ("app=web,,x", "empty term"),
        ("app in ()", "lists no value"),
        ("a b", "is not a term"),
        ("app=we b", "is not a term"),
        ("-bad=x", "not a label key"),
        ("app=" + "v" * 64, "not a label value"),
        ("x" * 1025, "characters long"),
    ],
)
def test_label_selectors_refused_with_the_reason_and_a_hint(selector: str, says: str) -> None:
    with pytest.raises(RuleViolation) as info:
        check_label_selector(selector)
    assert says in str(info.value) and info.value.hint


# ---- the query routes, with a fake cluster -------------------------------------------------


class FakeKube:
    def __init__(self) -> None:
        self.pods_by_name: dict[tuple[str, str], dict[str, Any]] = {}
        self.logs: dict[tuple[str, str, bool], str] = {}
        self.events_seen: list[tuple[str | None, str | None, int]] = []
        self.listed: list[tuple[str | None, str]] = []

    async def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pods_by_name.get((namespace, name))

    async def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return [p for (ns, _), p in self.pods_by_name.items() if ns == namespace]

    async def pods_in(self, namespace: str | None, selector: str = "") -> list[dict[str, Any]]:
        self.listed.append((namespace, selector))
        return [p for (ns, _), p in self.pods_by_name.items() if namespace in (None, ns)]

    async def events(
        self, namespace: str | None, field_selector: str | None, limit: int
    ) -> list[dict[str, Any]]:
        self.events_seen.append((namespace, field_selector, limit))
        return [_event("x", "2026-01-01T00:00:01Z"), _event("y", "2026-01-01T00:00:02Z")]

    async def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str | None = None,
        previous: bool = False,
        tail: int | None = None,
    ) -> str:
        text = self.logs.get((pod, str(container), previous), "")
        return "".join(line + "\n" for line in text.splitlines()[-(tail or 10**9) :])


class FakeClusters:
    def __init__(self, kube: FakeKube) -> None:
        self.the_kube = kube
        self.any_status: list[bool] = []

    async def kube(self, cluster: str, *, any_status: bool = False) -> FakeKube:
        if cluster == "gone":
            raise PermanentError("ClusterNotFound", f"cluster {cluster} is not known here")
        self.any_status.append(any_status)
        return self.the_kube

    async def recorded(self, cluster: str, name: str) -> dict[str, Any] | None:
        return {"name": name} if name == "train" else None

    async def pods_of(
        self, kube: FakeKube, job: str, namespace: str = "default"
    ) -> list[dict[str, Any]]:
        return [p for (ns, _), p in kube.pods_by_name.items() if ns == "default"]


@pytest.fixture
def world() -> tuple[QueryResponder, FakeKube, FakeClusters]:
    kube = FakeKube()
    restarted = _pod(
        "train-0",
        [
            _container(
                "trainer",
                restartCount=1,
                state={"running": {}},
                lastState={"terminated": {"reason": "Error", "exitCode": 1}},
            )
        ],
    )
    fresh = _pod(
        "fresh-0",
        [
            _container(
                "app",
                state={"waiting": {"reason": "CrashLoopBackOff"}},
                lastState={"terminated": {"reason": "Error", "exitCode": 2}},
            )
        ],
    )
    fresh["metadata"]["namespace"] = "tools"
    kube.pods_by_name = {("default", "train-0"): restarted, ("tools", "fresh-0"): fresh}
    kube.logs = {
        ("train-0", "trainer", True): "step 1\nstep 2\nNCCL WARN timeout\n",
        ("train-0", "trainer", False): "step 1\n",
        ("train-0", "None", False): "step 1\n",
        ("fresh-0", "app", False): "boom\n",
    }
    clusters = FakeClusters(kube)
    reads = Reads(None, clusters, None)  # type: ignore[arg-type]
    responder = QueryResponder(None, reads.routes(), SERVICE.name, quiet=SERVICE.quiet)  # type: ignore[arg-type]
    return responder, kube, clusters


async def _ask(responder: QueryResponder, subject: str, request: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = await responder.answer(subject, orjson.dumps(request))
    return answer


async def test_events_of_every_namespace_by_object_and_type(
    world: tuple[QueryResponder, FakeKube, FakeClusters],
) -> None:
    responder, kube, clusters = world
    answer = await _ask(
        responder,
        KUBE_EVENTS,
        {"cluster": "c", "kind": "Pod", "object": "web-0", "type": "Warning", "limit": 1},
    )
    assert answer["ok"], answer
    data = answer["data"]
    assert data["namespace"] == "*" and [e["message"] for e in data["events"]] == ["y happened"]
    assert kube.events_seen[-1][:2] == (
        None,
        "involvedObject.kind=Pod,involvedObject.name=web-0,type=Warning",
    )
    assert clusters.any_status == [True]  # a read: a failed create's API can be read too
    await _ask(responder, KUBE_EVENTS, {"cluster": "c", "namespace": "kube-system"})
    assert kube.events_seen[-1][:2] == ("kube-system", None)
    refused = await _ask(responder, KUBE_EVENTS, {"cluster": "c", "type": "Fatal"})
    assert refused["error"]["code"] == "invalid_request"
    assert refused["error"]["message"].startswith("type: ")
    gone = await _ask(responder, KUBE_EVENTS, {"cluster": "gone"})
    assert gone["error"]["code"] == "ClusterNotFound"


async def test_pods_of_a_namespace_or_all_with_a_checked_selector(
    world: tuple[QueryResponder, FakeKube, FakeClusters],
) -> None:
    responder, kube, _ = world
    answer = await _ask(responder, PODS, {"cluster": "c"})
    assert [p["name"] for p in answer["data"]["pods"]] == ["train-0"]
    assert kube.listed[-1] == ("default", "")
    everywhere = await _ask(responder, PODS, {"cluster": "c", "namespace": "*", "selector": "a=b"})
    assert [p["status"] for p in everywhere["data"]["pods"]] == ["Running", "CrashLoopBackOff"]
    assert kube.listed[-1] == (None, "a=b")
    refused = await _ask(responder, PODS, {"cluster": "c", "selector": "app in ("})
    error = refused["error"]
    assert error["code"] == "invalid_request" and error["message"].startswith("selector: ")
    assert "label selector" in error["hint"]


async def test_pod_logs_current_previous_and_the_refusals(
    world: tuple[QueryResponder, FakeKube, FakeClusters],
) -> None:
    responder, _, _ = world
    base = {"cluster": "c", "namespace": "default", "pod": "train-0"}
    previous = await _ask(responder, POD_LOGS, {**base, "previous": True, "tail": 2})
    data = previous["data"]
    assert data["lines"] == ["step 2", "NCCL WARN timeout"]
    assert (data["container"], data["restart_count"], data["previous"]) == ("trainer", 1, True)
    current = await _ask(responder, POD_LOGS, base)
    assert current["data"]["lines"] == ["step 1"] and current["data"]["containers"] == ["trainer"]

    missing = await _ask(responder, POD_LOGS, {**base, "pod": "nope"})
    assert missing["error"]["code"] == "PodNotFound"
    assert "pods?namespace=default" in missing["error"]["hint"]
    wrong = await _ask(responder, POD_LOGS, {**base, "container": "other"})
    assert wrong["error"]["code"] == "invalid_request"
    assert (
        wrong["error"]["message"].startswith("container: ") and "trainer" in wrong["error"]["hint"]
    )
    # Crashed but not restarted yet: its current log is the one that stopped.
    none_yet = await _ask(
        responder,
        POD_LOGS,
        {"cluster": "c", "namespace": "tools", "pod": "fresh-0", "previous": True},
    )
    assert none_yet["error"]["code"] == "PreviousLogNotFound"
    assert "without previous" in none_yet["error"]["hint"]
    bad = await _ask(responder, POD_LOGS, {**base, "tail": 0})
    assert bad["error"]["code"] == "invalid_request" and bad["error"]["message"].startswith(
        "tail: "
    )


async def test_a_job_pods_previous_log_is_paged_like_its_current_log(
    world: tuple[QueryResponder, FakeKube, FakeClusters],
) -> None:
    responder, _, _ = world
    request = {"cluster": "c", "job": "train", "pod": "train-0", "previous": True}
    page = (await _ask(responder, LOGS, request))["data"]
    assert page["lines"] == ["step 1", "step 2", "NCCL WARN timeout"]
    assert page["previous"] is True and page["running"] is False and page["more"] is False
    second = (await _ask(responder, LOGS, {**request, "from": 2}))["data"]
    assert second["lines"] == ["NCCL WARN timeout"] and second["start"] == 2
    current = (await _ask(responder, LOGS, {**request, "previous": False}))["data"]
    assert current["lines"] == ["step 1"] and current["previous"] is False
    refused = await _ask(responder, LOGS, {**request, "previous": "yes"})
    assert refused["error"]["code"] == "invalid_request"
    assert JOB in responder.routes  # the job route is still served beside them
