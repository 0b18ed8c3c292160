"""KubeRay: a RayCluster runs a head pod, worker pods and a head Service; a RayJob brings up
its cluster, runs its entrypoint, reports RUNNING then SUCCEEDED, and may shut the cluster down;
a suspended RayJob (`spec.suspend`, as Kueue sets it) has no cluster until it is resumed."""

from __future__ import annotations

from typing import Any

from sim.k8s.controllers.base import Controller, Rule, owner_ref, random_suffix, template_pod
from sim.k8s.controllers.workloads import active, pod_ready
from sim.k8s.store import Obj, WatchEvent, clone
from sim.k8s.timeutil import now_iso

CLUSTERS = "rayclusters.ray.io"
JOBS = "rayjobs.ray.io"


def _alive(obj: Obj) -> bool:
    return not obj["metadata"].get("deletionTimestamp")


class KubeRayOperator(Controller):
    name = "kuberay-operator"

    def active(self) -> bool:
        return self.api.registry.has_crd("ray.io", "rayclusters")

    def build_rules(self) -> list[Rule]:
        return [
            Rule("cluster", CLUSTERS, _alive, self.reconcile_cluster),
            Rule(
                "job",
                JOBS,
                lambda j: (
                    _alive(j)
                    and (j.get("status") or {}).get("jobDeploymentStatus")
                    not in ("Complete", "Failed")
                ),
                self.reconcile_job,
            ),
            Rule(
                "job-finish",
                JOBS,
                self._job_running,
                self.finish_job,
                delay=lambda p: p.container_start * 20,
            ),
        ]

    def extra_watches(self) -> tuple[str, ...]:
        return ("pods",)

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key == "pods":
            return self.owner_of(event, CLUSTERS, "RayCluster")
        if event.key == CLUSTERS:
            return self.owner_of(event, JOBS, "RayJob")
        return []

    def watched(self) -> set[str]:
        return {CLUSTERS, JOBS, "pods"}

    def reconcile_cluster(self, cluster: Obj) -> None:
        name, ns = cluster["metadata"]["name"], cluster["metadata"]["namespace"]
        spec = cluster["spec"]
        pods = [p for p in self.children("pods", cluster) if active(p)]
        heads = [
            p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "head"
        ]
        base = {"ray.io/cluster": name, "app.kubernetes.io/created-by": "kuberay-operator"}
        if not heads:
            head = template_pod(
                cluster,
                spec["headGroupSpec"].get("template") or {},
                f"{name}-head-{random_suffix()}",
                {**base, "ray.io/node-type": "head", "ray.io/group": "headgroup"},
            )
            self.create("pods", head)
        desired = 0
        for group in spec.get("workerGroupSpecs") or []:
            want = int(group.get("replicas", group.get("minReplicas", 0)) or 0) * int(
                group.get("numOfHosts", 1) or 1
            )
            desired += want
            members = [
                p
                for p in pods
                if (p["metadata"].get("labels") or {}).get("ray.io/group") == group["groupName"]
            ]
            for _ in range(want - len(members)):
                worker = template_pod(
                    cluster,
                    group.get("template") or {},
                    f"{name}-{group['groupName']}-worker-{random_suffix()}",
                    {**base, "ray.io/node-type": "worker", "ray.io/group": group["groupName"]},
                )
                self.create("pods", worker)
            for extra in members[want:]:
                self.delete("pods", extra)
        service = f"{name}-head-svc"
        if self.store.get("services", ns, service) is None:
            self.create(
                "services",
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {
                        "name": service,
                        "namespace": ns,
                        "ownerReferences": [owner_ref(cluster)],
                        "labels": base,
                    },
                    "spec": {
                        "selector": {**base, "ray.io/node-type": "head"},
                        "ports": [
                            {"name": "gcs", "port": 6379},
                            {"name": "dashboard", "port": 8265},
                            {"name": "client", "port": 10001},
                        ],
                    },
                },
            )
        pods = [p for p in self.children("pods", cluster) if active(p)]
        workers = [
            p
            for p in pods
            if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "worker"
        ]
        head_pod = next(
            (
                p
                for p in pods
                if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "head"
            ),
            None,
        )
        ready = (
            head_pod is not None
            and pod_ready(head_pod)
            and sum(1 for w in workers if pod_ready(w)) >= desired
        )
        svc = self.store.get("services", ns, service)
        status: dict[str, Any] = dict(cluster.get("status") or {})
        status.update(
            state="ready" if ready else "",
            desiredWorkerReplicas=desired,
            readyWorkerReplicas=sum(1 for w in workers if pod_ready(w)),
            availableWorkerReplicas=sum(1 for w in workers if pod_ready(w)),
            minWorkerReplicas=sum(
                int(g.get("minReplicas", 0) or 0) for g in spec.get("workerGroupSpecs") or []
            ),
            maxWorkerReplicas=sum(
                int(g.get("maxReplicas", 0) or 0) for g in spec.get("workerGroupSpecs") or []
            ),
            endpoints={"client": "10001", "dashboard": "8265", "gcs-server": "6379"},
            head={
                "podName": head_pod["metadata"]["name"] if head_pod else "",
                "podIP": ((head_pod or {}).get("status") or {}).get("podIP", ""),
                "serviceIP": ((svc or {}).get("spec") or {}).get("clusterIP", ""),
                "serviceName": service,
            },
            observedGeneration=cluster["metadata"].get("generation", 1),
        )
        if not ready:
            status.pop("state")
        if status != cluster.get("status"):
            status["lastUpdateTime"] = now_iso()
            cluster["status"] = status
            self.update_status(CLUSTERS, cluster)

    def reconcile_job(self, job: Obj) -> None:
        ns = job["metadata"]["namespace"]
        status = clone(job.get("status") or {})
        cluster_name = status.get("rayClusterName")
        if job["spec"].get("suspend"):
            self._suspend(job, status)
            return
        if not cluster_name:
            cluster_name = f"{job['metadata']['name']}-{random_suffix()}"
            self.create(
                CLUSTERS,
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "metadata": {
                        "name": cluster_name,
                        "namespace": ns,
                        "ownerReferences": [owner_ref(job)],
                        "labels": {
                            "ray.io/originated-from-crd": "RayJob",
                            "ray.io/originated-from-cr-name": job["metadata"]["name"],
                        },
                    },
                    "spec": clone(
                        job["spec"].get("rayClusterSpec")
                        or {
                            "headGroupSpec": {
                                "template": {
                                    "spec": {
                                        "containers": [
                                            {"name": "ray-head", "image": "rayproject/ray:2.41.0"}
                                        ]
                                    }
                                }
                            }
                        }
                    ),
                },
            )
            status.update(
                rayClusterName=cluster_name,
                jobId=job["spec"].get("jobId") or f"{job['metadata']['name']}-{random_suffix()}",
                jobDeploymentStatus="Initializing",
                jobStatus="PENDING",
                startTime=now_iso(),
                dashboardURL=f"{cluster_name}-head-svc.{ns}.svc.cluster.local:8265",
            )
        cluster = self.store.get(CLUSTERS, ns, cluster_name)
        if (
            cluster is not None
            and (cluster.get("status") or {}).get("state") == "ready"
            and status.get("jobDeploymentStatus") == "Initializing"
        ):
            status.update(jobDeploymentStatus="Running", jobStatus="RUNNING")
            self.event(job, "Running", f"Submitted entrypoint: {job['spec'].get('entrypoint', '')}")
        if cluster is not None:
            status["rayClusterStatus"] = clone(cluster.get("status") or {})
        if status != job.get("status"):
            job["status"] = status
            self.update_status(JOBS, job)

    def _suspend(self, job: Obj, status: Obj) -> None:
        """KubeRay's suspend (https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/
        rayjob-quick-start.html, `suspend`): a suspended RayJob has no RayCluster; suspending a
        running one deletes its cluster and resets its status until it is resumed."""
        cluster_name = status.get("rayClusterName")
        if cluster_name:
            cluster = self.store.get(CLUSTERS, job["metadata"]["namespace"], cluster_name)
            if cluster is not None:
                self.delete(CLUSTERS, cluster)
        suspended = {"jobDeploymentStatus": "Suspended"}
        if status != suspended:
            if status.get("jobDeploymentStatus") not in (None, "Suspended"):
                self.event(job, "Suspended", "Suspended RayJob")
            job["status"] = suspended
            self.update_status(JOBS, job)

    @staticmethod
    def _job_running(job: Obj) -> bool:
        return (job.get("status") or {}).get("jobStatus") == "RUNNING" and not job["metadata"].get(
            "deletionTimestamp"
        )

    def finish_job(self, job: Obj) -> None:
        status = clone(job["status"])
        status.update(
            jobStatus="SUCCEEDED",
            jobDeploymentStatus="Complete",
            endTime=now_iso(),
            succeeded=1,
            message="Job finished successfully.",
        )
        job["status"] = status
        self.update_status(JOBS, job)
        self.event(job, "Completed", "RayJob completed")
        if job["spec"].get("shutdownAfterJobFinishes"):
            cluster = self.store.get(
                CLUSTERS, job["metadata"]["namespace"], status.get("rayClusterName", "")
            )
            if cluster is not None:
                self.delete(CLUSTERS, cluster)
