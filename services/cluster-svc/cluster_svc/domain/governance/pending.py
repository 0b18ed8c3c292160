"""Why is my job pending? (pure): the job's Kueue Workload and its conditions, the team's
ClusterQueue with its quota, usage and borrowing, the other teams of the cohort and what they
could lend, the priority classes, free GPUs per node, node health and taints, and the
scheduling events, joined into one short answer with the fixes.

Kueue's own words are read as it writes them (https://kueue.sigs.k8s.io/docs/concepts/workload/
and the ClusterQueue status, https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/):
`QuotaReserved` False with reason `Pending` carries "couldn't assign flavors to pod set <ps>:
insufficient unused quota for <resource> in flavor <flavor>, <n> more needed" (or "borrowing
limit ... exceeded", or "request > maximum capacity"); `Inadmissible` names a missing
LocalQueue or an inactive ClusterQueue; `Evicted` with reason `Preempted` says why it lost its
place; `Admitted` True means Kueue let it run and the rest is the Kubernetes scheduler's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cluster_svc.domain.governance.actual import QuotaActual
from shared.boundary import PRIORITY_LABEL, QUEUE_LABEL, TEAM_NAMESPACE_PREFIX
from shared.contracts.capacity import ClusterCapacity
from shared.contracts.governance import PendingExplanation

KubeObject = dict[str, Any]
GPU = "nvidia.com/gpu"
CLUSTER_QUEUE_SUFFIX = "-clusterqueue"
PRIORITY_SUFFIX = "-priority"

_UNUSED = re.compile(
    r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), "
    r"(?P<more>\d+) more needed"
)
# Kueue's flavor assigner: "borrowing limit for %s in flavor %s exceeded" (flavor names, such
# as ml.p5.48xlarge, have dots)
_BORROW = re.compile(r"borrowing limit for (?P<resource>\S+) in flavor (?P<flavor>\S+) exceeded")
_MAXIMUM = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), request > maximum"
    r" capacity \((?P<ask>\d+) > (?P<max>\d+)\)"
)
_PREEMPTING = re.compile(r"Pending the preemption of (\d+) workload")


class Answer(Protocol):
    def __call__(
        self, pending: bool, reason: str, summary: str, fixes: list[str], **more: Any
    ) -> PendingExplanation: ...


@dataclass(frozen=True)
class JobRef:
    cluster: str
    name: str
    namespace: str
    kind: str
    api_version: str


@dataclass(frozen=True)
class PendingFacts:
    job: KubeObject | None
    workloads: Sequence[KubeObject]  # every Workload of the cluster
    cluster_queues: Sequence[KubeObject]
    priority_classes: Mapping[str, int]  # WorkloadPriorityClass name -> value
    quotas: Mapping[str, QuotaActual]  # team -> its compute quota
    capacity: ClusterCapacity | None
    events: Sequence[KubeObject] = field(default_factory=list)
    pods: Sequence[KubeObject] = field(default_factory=list)  # every Pod of the cluster


def quantity(value: Any) -> float:
    """A Kubernetes quantity as a number (GPUs and CPUs are plain or milli)."""
    text = str(value or "0")
    if text.endswith("m"):
        return float(text[:-1]) / 1000
    try:
        return float(text)
    except ValueError:
        return 0.0


def _conditions(obj: KubeObject | None) -> dict[str, KubeObject]:
    return {
        str(c.get("type")): c for c in ((obj or {}).get("status") or {}).get("conditions") or []
    }


def _true(conditions: Mapping[str, KubeObject], kind: str) -> bool:
    return (conditions.get(kind) or {}).get("status") == "True"


def _selected(obj: KubeObject, pod: KubeObject) -> bool:
    wanted = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def _pod_workload(
    job: JobRef, obj: KubeObject, workloads: Sequence[KubeObject], pods: Sequence[KubeObject]
) -> KubeObject | None:
    """A Deployment's pods are plain Pod workloads (Kueue's pod integration), one per pod: the
    first that Kueue has not admitted, else any of them."""
    uids = {
        (p.get("metadata") or {}).get("uid")
        for p in pods
        if (p.get("metadata") or {}).get("namespace") == job.namespace and _selected(obj, p)
    }
    mine = [
        w
        for w in workloads
        if (w.get("metadata") or {}).get("namespace") == job.namespace
        and any(
            o.get("kind") == "Pod" and o.get("uid") in uids
            for o in (w.get("metadata") or {}).get("ownerReferences") or []
        )
    ]
    mine.sort(key=lambda w: str((w.get("metadata") or {}).get("creationTimestamp") or ""))
    waiting = [w for w in mine if not _true(_conditions(w), "Admitted")]
    chosen = waiting or mine
    return chosen[0] if chosen else None


def workload_of(
    job: JobRef,
    obj: KubeObject | None,
    workloads: Sequence[KubeObject],
    pods: Sequence[KubeObject] = (),
) -> KubeObject | None:
    """The job's Workload: in its namespace, owned by it (its uid, else its kind and name); a
    Deployment's: the Workload of one of its pods, a waiting one first."""
    if job.kind == "Deployment" and obj is not None:
        return _pod_workload(job, obj, workloads, pods)
    uid = ((obj or {}).get("metadata") or {}).get("uid")
    for workload in workloads:
        meta = workload.get("metadata") or {}
        if meta.get("namespace") != job.namespace:
            continue
        for owner in meta.get("ownerReferences") or []:
            if (uid and owner.get("uid") == uid) or (
                owner.get("kind") == job.kind and owner.get("name") == job.name
            ):
                return workload
    return None


def team_of(namespace: str) -> str | None:
    return (
        namespace.removeprefix(TEAM_NAMESPACE_PREFIX)
        if namespace.startswith(TEAM_NAMESPACE_PREFIX)
        else None
    )


def _queue_team(queue: KubeObject) -> str:
    name = str((queue.get("metadata") or {}).get("name") or "")
    return team_of(name.removesuffix(CLUSTER_QUEUE_SUFFIX)) or name


@dataclass(frozen=True)
class FlavorQuota:
    team: str
    nominal: float
    borrowing_limit: float | None
    lending_limit: float | None
    used: float
    borrowed: float

    @property
    def idle(self) -> float:
        """What the team does not use of its own quota and may lend."""
        free = max(self.nominal - (self.used - self.borrowed), 0.0)
        return free if self.lending_limit is None else min(free, self.lending_limit)


def flavor_quota(queue: KubeObject, flavor: str, resource: str) -> FlavorQuota | None:
    spec = queue.get("spec") or {}
    found: KubeObject | None = None
    for group in spec.get("resourceGroups") or []:
        for item in group.get("flavors") or []:
            if item.get("name") != flavor:
                continue
            for res in item.get("resources") or []:
                if res.get("name") == resource:
                    found = res
    if found is None:
        return None
    used = borrowed = 0.0
    status = queue.get("status") or {}
    for item in status.get("flavorsUsage") or status.get("flavorsReservation") or []:
        if item.get("name") != flavor:
            continue
        for res in item.get("resources") or []:
            if res.get("name") == resource:
                used, borrowed = quantity(res.get("total")), quantity(res.get("borrowed"))
    limit = found.get("borrowingLimit")
    lend = found.get("lendingLimit")
    return FlavorQuota(
        team=_queue_team(queue),
        nominal=quantity(found.get("nominalQuota")),
        borrowing_limit=None if limit is None else quantity(limit),
        lending_limit=None if lend is None else quantity(lend),
        used=used,
        borrowed=borrowed,
    )


def _n(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _unit(resource: str) -> str:
    return "GPUs" if resource == GPU else resource


def _asks(workload: KubeObject, resource: str) -> float:
    total = 0.0
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        count = int(pod_set.get("count") or 1)
        pod = ((pod_set.get("template") or {}).get("spec")) or {}
        per_pod = 0.0
        for container in pod.get("containers") or []:
            res = container.get("resources") or {}
            per_pod += quantity(
                (res.get("requests") or {}).get(resource) or (res.get("limits") or {}).get(resource)
            )
        total += count * per_pod
    return total


def _priority_name(workload: KubeObject | None, job: KubeObject | None) -> str | None:
    name = ((workload or {}).get("spec") or {}).get("priorityClassName") or (
        ((job or {}).get("metadata") or {}).get("labels") or {}
    ).get(PRIORITY_LABEL)
    return str(name) if name else None


def _short(priority: str | None) -> str | None:
    return priority.removesuffix(PRIORITY_SUFFIX) if priority else None


def _queue_named(queues: Sequence[KubeObject], name: str) -> KubeObject | None:
    return next((q for q in queues if (q.get("metadata") or {}).get("name") == name), None)


def _admitted_in(workloads: Sequence[KubeObject], queue: str) -> list[KubeObject]:
    out = []
    for workload in workloads:
        admission = (workload.get("status") or {}).get("admission") or {}
        if admission.get("clusterQueue") == queue and _true(_conditions(workload), "Admitted"):
            out.append(workload)
    return out


def _priority_of(workload: KubeObject, classes: Mapping[str, int]) -> int:
    spec = workload.get("spec") or {}
    if spec.get("priority") is not None:
        return int(spec["priority"])
    return classes.get(str(spec.get("priorityClassName") or ""), 0)


def _warnings(events: Sequence[KubeObject]) -> list[dict[str, Any]]:
    picked = [
        e
        for e in events
        if e.get("type") == "Warning"
        or e.get("reason")
        in ("Pending", "Preempted", "EvictedDueToPreempted", "Stopped", "FailedScheduling")
    ]
    return [
        {
            "object": f"{(e.get('involvedObject') or {}).get('kind')}/"
            f"{(e.get('involvedObject') or {}).get('name')}",
            "type": e.get("type"),
            "reason": e.get("reason"),
            "message": e.get("message"),
            "count": e.get("count"),
        }
        for e in picked[-8:]
    ]


def explain(ref: JobRef, facts: PendingFacts) -> PendingExplanation:
    def answer(
        pending: bool, reason: str, summary: str, fixes: list[str], **more: Any
    ) -> PendingExplanation:
        return PendingExplanation(
            cluster=ref.cluster,
            job=ref.name,
            namespace=ref.namespace,
            pending=pending,
            reason=reason,
            summary=summary,
            fixes=fixes,
            facts={"events": _warnings(facts.events), **more},
        )

    if facts.job is None:
        return answer(
            False,
            "not_found",
            f"{ref.kind} {ref.name} is not in namespace {ref.namespace} any more",
            [f"read the job's record: GET /api/v1/clusters/{ref.cluster}/jobs/{ref.name}"],
        )
    labels = (facts.job.get("metadata") or {}).get("labels") or {}
    team = team_of(ref.namespace)
    workload = workload_of(ref, facts.job, facts.workloads, facts.pods)
    classes = sorted(facts.priority_classes.items(), key=lambda kv: -kv[1])
    if workload is None:
        if labels.get(QUEUE_LABEL) is None:
            return _scheduling(ref, facts, answer, admitted_by=None)
        compose = next(
            (e for e in reversed(facts.events) if e.get("reason") == "ErrWorkloadCompose"), None
        )
        if compose is not None:
            known = ", ".join(_short(n) or n for n, _ in classes) or "none"
            return answer(
                True,
                "priority_class_missing",
                f"Kueue cannot queue {ref.name}: {compose.get('message')}",
                [f"resubmit with one of the cluster's priority classes ({known})"],
            )
        return answer(
            True,
            "not_queued",
            f"Kueue has not queued {ref.name} yet (no Workload in {ref.namespace})",
            [
                "check that task governance is enabled: GET /api/v1/clusters/"
                f"{ref.cluster}/teams shows the add-on's status"
            ],
        )
    conditions = _conditions(workload)
    queue_name = f"{ref.namespace}{CLUSTER_QUEUE_SUFFIX}"
    admission = (workload.get("status") or {}).get("admission") or {}
    if _true(conditions, "Admitted"):
        return _scheduling(ref, facts, answer, admitted_by=admission.get("clusterQueue"))
    reserved = conditions.get("QuotaReserved") or {}
    message = str(reserved.get("message") or "")
    evicted = conditions.get("Evicted") if _true(conditions, "Evicted") else None
    before = (
        f"{ref.name} was preempted ({evicted.get('message')}) and waits again; "
        if evicted is not None
        else ""
    )
    if reserved.get("reason") == "Inadmissible":
        fix = (
            f"create team {team} (POST /api/v1/clusters/{ref.cluster}/teams)"
            if "doesn't exist" in message
            else f"activate team {team} (PATCH /api/v1/clusters/{ref.cluster}/teams/{team}"
            ' {"active": true})'
        )
        return answer(
            True, "inadmissible", before + f"Kueue cannot admit {ref.name}: {message}", [fix]
        )
    priority = _priority_name(workload, facts.job)
    own = _queue_named(facts.cluster_queues, queue_name)
    maximum = _MAXIMUM.search(message)
    found = _UNUSED.search(message) or _BORROW.search(message) or maximum
    flavor = found.group("flavor") if found is not None else None
    resource = found.group("resource") if found is not None else GPU
    if own is None or flavor is None:
        return answer(
            True,
            "queued",
            before + f"Kueue holds {ref.name} in {queue_name}: {message or 'no reason given yet'}",
            [f"read the team's quota: GET /api/v1/clusters/{ref.cluster}/teams"],
        )
    mine = flavor_quota(own, flavor, resource)
    ask = _asks(workload, resource)
    unit = _unit(resource)
    if mine is None:
        return answer(
            True,
            "no_quota",
            before + f"team {team} has no quota of {flavor} {unit}; this job asks {_n(ask)}",
            [
                f"give team {team} quota of {flavor} (PATCH /api/v1/clusters/{ref.cluster}/teams/{team})"
            ],
        )
    cohort = (own.get("spec") or {}).get("cohort")
    lenders = []
    for queue in facts.cluster_queues:
        if queue is own or (queue.get("spec") or {}).get("cohort") != cohort or cohort is None:
            continue
        theirs = flavor_quota(queue, flavor, resource)
        if theirs is not None and theirs.idle > 0:
            lenders.append(theirs)
    idle = sum(q.idle for q in lenders)
    may_borrow = mine.borrowing_limit is None or mine.borrowing_limit > 0
    sharing = facts.quotas.get(team or "")
    facts_out: dict[str, Any] = {
        "workload": (workload.get("metadata") or {}).get("name"),
        "conditions": {
            k: {"status": v.get("status"), "reason": v.get("reason"), "message": v.get("message")}
            for k, v in conditions.items()
        },
        "cluster_queue": queue_name,
        "flavor": flavor,
        "resource": resource,
        "asks": ask,
        "quota": {
            "nominal": mine.nominal,
            "used": mine.used,
            "borrowed": mine.borrowed,
            "borrowing_limit": mine.borrowing_limit,
        },
        "lenders": [{"team": q.team, "idle": q.idle} for q in lenders],
        "priority": _short(priority),
    }
    if maximum is not None:
        return answer(
            True,
            "beyond_maximum",
            before + f"{ref.name} asks {maximum.group('ask')} {flavor} {unit}, more than team"
            f" {team} can ever hold ({maximum.group('max')}: its quota plus what it may borrow)",
            [
                f"ask for at most {maximum.group('max')} {unit}",
                f"raise team {team}'s quota or borrow_limit (PATCH /api/v1/clusters/{ref.cluster}"
                f"/teams/{team})",
            ],
            **facts_out,
        )
    summary = (
        f"{before}team {team} is at its quota of {_n(mine.nominal)} {flavor} {unit}"
        f" ({_n(mine.used)} in use"
        + (f", {_n(mine.borrowed)} borrowed" if mine.borrowed else "")
        + f"; this job asks {_n(ask)})"
    )
    if lenders:
        summary += "; " + ", ".join(f"team {q.team} lends {_n(q.idle)} idle" for q in lenders)
    else:
        summary += "; no other team has idle quota to lend"
    fixes: list[str] = []
    preempting = _PREEMPTING.search(message)
    if preempting:
        summary += f"; Kueue is preempting {preempting.group(1)} lower-priority workload(s) for it"
    mine_value = facts.priority_classes.get(priority or "", 0)
    own_policy = ((own.get("spec") or {}).get("preemption") or {}).get("withinClusterQueue")
    running = [
        ((w.get("metadata") or {}).get("name"), _priority_of(w, facts.priority_classes))
        for w in _admitted_in(facts.workloads, queue_name)
    ]
    if own_policy == "LowerPriority" and running:
        below = [name for name, value in running if value < mine_value]
        if below and not preempting:
            summary += (
                f"; it may preempt team {team}'s lower-priority"
                f" {', '.join(str(n) for n in below[:3])}"
            )
        elif not below:
            # the lowest class above the team's lowest running workload preempts that one
            lowest = min(value for _, value in running)
            above = [n for n, v in sorted(classes, key=lambda kv: kv[1]) if v > lowest]
            if above:
                victims = [str(n) for n, v in running if v < facts.priority_classes[above[0]]]
                fixes.append(
                    f"set priority {_short(above[0])}: it preempts team {team}'s lower-priority"
                    f" {', '.join(victims[:3])}"
                )
    if lenders and not may_borrow:
        fixes.append(
            f"let team {team} borrow: PATCH /api/v1/clusters/{ref.cluster}/teams/{team}"
            ' {"sharing": "LendAndBorrow"}'
        )
    elif lenders and idle < ask - max(mine.nominal - mine.used, 0):
        fixes.append(
            f"ask {' or '.join('team ' + q.team for q in lenders)} to lend more: together they"
            f" lend {_n(idle)} idle {unit}"
        )
    elif not lenders:
        fixes.append(
            "ask another team to lend idle quota (its sharing Lend or LendAndBorrow), or wait"
            f" for team {team}'s running jobs to finish"
        )
    else:
        fixes.append(
            f"ask {' or '.join('team ' + q.team for q in lenders)}: Kueue admits it by"
            " borrowing once the lender's idle quota covers it"
        )
    fixes.append(
        f"raise team {team}'s quota of {flavor} (PATCH /api/v1/clusters/{ref.cluster}/teams/{team})"
    )
    if sharing is not None:
        facts_out["team_sharing"] = (sharing.config.get("ResourceSharingConfig") or {}).get(
            "Strategy"
        )
    return answer(True, "quota", summary, fixes, **facts_out)


def _scheduling(
    ref: JobRef, facts: PendingFacts, answer: Answer, admitted_by: str | None
) -> PendingExplanation:
    """Kueue let the job run (or does not govern it): what the Kubernetes scheduler says."""
    capacity = facts.capacity
    pods = [
        p
        for p in (capacity.pending if capacity else [])
        if p.namespace == ref.namespace and p.name.startswith(ref.name)
    ]
    admitted = f"admitted by ClusterQueue {admitted_by}; " if admitted_by else ""
    if not pods:
        return answer(
            False,
            "admitted" if admitted_by else "running",
            f"{ref.name} is not waiting: {admitted}no pod of it is pending",
            [],
        )
    pod = pods[0]
    nodes = capacity.nodes if capacity else []
    wanted_type = pod.instance_type
    candidates = [n for n in nodes if wanted_type is None or n.instance_type == wanted_type]
    fit = [
        n
        for n in candidates
        if n.schedulable and n.resources.gpus.free >= pod.gpus and n.resources.efa.free >= pod.efa
    ]
    blocked = [f"{n.name} ({'; '.join(n.reasons)})" for n in candidates if not n.schedulable]
    best = max((n.resources.gpus.free for n in candidates if n.schedulable), default=0)
    what = f"{pod.gpus} free GPUs" + (f" and {pod.efa} EFA" if pod.efa else "")
    where = f" of type {wanted_type}" if wanted_type else ""
    groups = [
        g
        for g in (capacity.groups if capacity else [])
        if wanted_type is None or g.instance_type == wanted_type
    ]
    fixes = []
    if not fit:
        summary = (
            f"{admitted}{len(pods)} pod(s) of {ref.name} wait: no node{where} has {what}"
            f" (the most free on a schedulable node: {best})"
        )
        if blocked:
            summary += f"; not schedulable: {', '.join(blocked[:5])}"
            fixes.append(
                "replace or reboot the unhealthy nodes (POST /api/v1/clusters/"
                f"{ref.cluster}/nodes/{{node}}/replace)"
            )
        for group in groups:
            fixes.append(
                f"scale group {group.name} ({group.nodes} node(s) now): PATCH /api/v1/clusters/"
                f"{ref.cluster}/instance-groups/{group.name} with a higher count (try ?dry_run=true)"
            )
        fixes.append("ask for fewer GPUs per pod, or wait for running pods to finish")
    else:
        summary = f"{admitted}{len(pods)} pod(s) of {ref.name} wait for the scheduler: {pod.reason or 'no reason given yet'}"
    return answer(
        True,
        "capacity",
        summary,
        fixes,
        pod=pod.model_dump(mode="json"),
        nodes_that_fit=[n.name for n in fit],
    )


def _accelerator(resource: str) -> bool:
    return resource in (GPU, "aws.amazon.com/neuron") or resource.startswith("nvidia.com/mig-")


def team_usage(queues: Sequence[KubeObject]) -> dict[str, list[dict[str, Any]]]:
    """Per team, from its ClusterQueue as Kueue reports it: for each instance type (flavor) and
    accelerator resource (GPUs, Neuron devices, MIG partitions) it has quota of or uses, its
    quota, what its admitted workloads use, what of that is borrowed, and its idle quota that
    others may borrow."""
    out: dict[str, list[dict[str, Any]]] = {}
    for queue in queues:
        rows: list[dict[str, Any]] = []
        for group in (queue.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    name = str(res.get("name") or "")
                    if not _accelerator(name):
                        continue
                    found = flavor_quota(queue, str(flavor.get("name")), name)
                    if found is None or not (found.nominal or found.used):
                        continue
                    rows.append(
                        {
                            "instance_type": flavor.get("name"),
                            "resource": name,
                            "quota": found.nominal,
                            "used": found.used,
                            "borrowed": found.borrowed,
                            "idle": found.idle,
                        }
                    )
        out[_queue_team(queue)] = rows
    return out
