"""Kueue's CRDs (kueue.x-k8s.io, v0.12 as the HyperPod task-governance add-on installs it):
structure, types, enums, required fields and printer columns of the upstream schemas
(https://kueue.sigs.k8s.io/docs/reference/kueue.v1beta1/), without the description prose."""

from __future__ import annotations

from sim.k8s.operators.crds import (
    ANY,
    CONDITIONS,
    INT,
    IOS,
    STRMAP,
    B,
    S,
    Schema,
    arr,
    crd,
    enum,
    obj,
)

GROUP = "kueue.x-k8s.io"

_TOLERATION = obj(effect=S, key=S, operator=S, tolerationSeconds=INT, value=S)
_TAINT = obj(("effect", "key"), effect=S, key=S, timeAdded=S, value=S)
_QUOTA = obj(
    ("name", "nominalQuota"), name=S, nominalQuota=IOS, borrowingLimit=IOS, lendingLimit=IOS
)
_FLAVOR_QUOTAS = obj(("name", "resources"), name=S, resources=arr(_QUOTA, minItems=1, maxItems=16))
RESOURCE_GROUPS = arr(
    obj(
        ("coveredResources", "flavors"),
        coveredResources=arr(S, minItems=1, maxItems=16),
        flavors=arr(_FLAVOR_QUOTAS, minItems=1, maxItems=16),
    ),
    maxItems=16,
)
_USAGE = arr(
    obj(
        ("name", "resources"),
        name=S,
        resources=arr(obj(("name",), name=S, total=IOS, borrowed=IOS)),
    )
)
_FAIR_SHARING = obj(weight=IOS)

RESOURCE_FLAVOR = crd(
    GROUP,
    "ResourceFlavor",
    "resourceflavors",
    obj(
        spec=obj(
            nodeLabels=STRMAP,
            nodeTaints=arr(_TAINT),
            tolerations=arr(_TOLERATION),
            topologyName=S,
        )
    ),
    versions=("v1beta1",),
    scope="Cluster",
    short_names=("flavor", "flavors", "rf"),
)

CLUSTER_QUEUE = crd(
    GROUP,
    "ClusterQueue",
    "clusterqueues",
    obj(
        spec=obj(
            admissionChecks=arr(S),
            cohort=S,
            fairSharing=_FAIR_SHARING,
            flavorFungibility=obj(
                whenCanBorrow=enum("Borrow", "TryNextFlavor"),
                whenCanPreempt=enum("Preempt", "TryNextFlavor"),
            ),
            namespaceSelector=ANY,
            preemption=obj(
                borrowWithinCohort=obj(
                    maxPriorityThreshold=INT, policy=enum("Never", "LowerPriority")
                ),
                reclaimWithinCohort=enum("Never", "LowerPriority", "Any"),
                withinClusterQueue=enum("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
            ),
            queueingStrategy=enum("StrictFIFO", "BestEffortFIFO"),
            resourceGroups=RESOURCE_GROUPS,
            stopPolicy=enum("None", "Hold", "HoldAndDrain"),
        ),
        status=obj(
            admittedWorkloads=INT,
            conditions=CONDITIONS,
            fairSharing=obj(weightedShare=INT),
            flavorsReservation=_USAGE,
            flavorsUsage=_USAGE,
            pendingWorkloads=INT,
            reservingWorkloads=INT,
        ),
    ),
    versions=("v1beta1",),
    scope="Cluster",
    short_names=("cq",),
    columns=(
        ("Cohort", "string", ".spec.cohort"),
        ("Strategy", "string", ".spec.queueingStrategy"),
        ("Pending Workloads", "integer", ".status.pendingWorkloads"),
        ("Admitted Workloads", "integer", ".status.admittedWorkloads"),
    ),
)

LOCAL_QUEUE = crd(
    GROUP,
    "LocalQueue",
    "localqueues",
    obj(
        spec=obj(clusterQueue=S, stopPolicy=enum("None", "Hold", "HoldAndDrain")),
        status=obj(
            admittedWorkloads=INT,
            conditions=CONDITIONS,
            flavorUsage=_USAGE,
            flavorsReservation=_USAGE,
            pendingWorkloads=INT,
            reservingWorkloads=INT,
        ),
    ),
    versions=("v1beta1",),
    short_names=("queue", "queues", "lq"),
    columns=(
        ("ClusterQueue", "string", ".spec.clusterQueue"),
        ("Pending Workloads", "integer", ".status.pendingWorkloads"),
        ("Admitted Workloads", "integer", ".status.admittedWorkloads"),
    ),
)

WORKLOAD_PRIORITY_CLASS = crd(
    GROUP,
    "WorkloadPriorityClass",
    "workloadpriorityclasses",
    obj(("value",), value=INT, description=S),
    versions=("v1beta1",),
    scope="Cluster",
    columns=(("Value", "integer", ".value"),),
)

_POD_SET_ASSIGNMENT = obj(
    ("name",),
    name=S,
    count=INT,
    flavors=STRMAP,
    resourceUsage={"type": "object", "additionalProperties": IOS},
    topologyAssignment=ANY,
)
WORKLOAD = crd(
    GROUP,
    "Workload",
    "workloads",
    obj(
        spec=obj(
            active=B,
            maximumExecutionTimeSeconds=INT,
            podSets=arr(
                obj(
                    ("count", "name", "template"),
                    count=INT,
                    minCount=INT,
                    name=S,
                    template=ANY,
                    topologyRequest=ANY,
                ),
                minItems=1,
                maxItems=8,
            ),
            priority=INT,
            priorityClassName=S,
            priorityClassSource=enum(
                "kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass", ""
            ),
            queueName=S,
        ),
        status=obj(
            accumulatedPastExexcutionTimeSeconds=INT,
            admission=obj(
                ("clusterQueue", "podSetAssignments"),
                clusterQueue=S,
                podSetAssignments=arr(_POD_SET_ASSIGNMENT),
            ),
            admissionChecks=arr(ANY),
            conditions=CONDITIONS,
            reclaimablePods=arr(obj(("count", "name"), count=INT, name=S)),
            requeueState=obj(count=INT, requeueAt=S),
            resourceRequests=arr(ANY),
        ),
    ),
    versions=("v1beta1",),
    short_names=("wl",),
    columns=(
        ("Queue", "string", ".spec.queueName"),
        ("Reserved in", "string", ".status.admission.clusterQueue"),
        ("Admitted", "string", '.status.conditions[?(@.type=="Admitted")].status'),
        ("Finished", "string", '.status.conditions[?(@.type=="Finished")].status'),
    ),
)

COHORT = crd(
    GROUP,
    "Cohort",
    "cohorts",
    obj(spec=obj(parent=S, resourceGroups=RESOURCE_GROUPS, fairSharing=_FAIR_SHARING)),
    versions=("v1alpha1",),
    scope="Cluster",
)

KUEUE_CRDS: dict[str, Schema] = {
    "resourceflavors.kueue.x-k8s.io": RESOURCE_FLAVOR,
    "clusterqueues.kueue.x-k8s.io": CLUSTER_QUEUE,
    "localqueues.kueue.x-k8s.io": LOCAL_QUEUE,
    "workloadpriorityclasses.kueue.x-k8s.io": WORKLOAD_PRIORITY_CLASS,
    "workloads.kueue.x-k8s.io": WORKLOAD,
    "cohorts.kueue.x-k8s.io": COHORT,
}
