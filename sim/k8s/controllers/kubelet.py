"""The kubelets of all nodes: pull images, start containers, run their programs (which write
the pod logs), restart them per restartPolicy, and report pod phase and conditions."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import itertools
from typing import TYPE_CHECKING

from sim.k8s.controllers.base import Controller, Rule, set_condition
from sim.k8s.controllers.nodes import is_ready
from sim.k8s.controllers.programs import Program, program_for
from sim.k8s.files import locate, pod_volume
from sim.k8s.mlflow_client import reporter_for
from sim.k8s.store import Obj, WatchEvent, clone
from sim.k8s.timeutil import now_iso
from sim.profile import REAL

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

TERMINAL = ("Succeeded", "Failed")


PULLING = ("ContainerCreating", "ErrImagePull", "ImagePullBackOff")


def _waiting_creating(pod: Obj) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all(
        (s.get("state") or {}).get("waiting", {}).get("reason") in PULLING for s in statuses
    )


def _container_id(pod: Obj, name: str, restart: int) -> str:
    digest = hashlib.sha256(f"{pod['metadata']['uid']}/{name}/{restart}".encode()).hexdigest()
    return f"containerd://{digest}"


class Kubelet(Controller):
    name = "kubelet"

    def __init__(self, server: ApiServer) -> None:
        super().__init__(server)
        self.tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.pull_started: dict[str, float] = {}
        self.pull_retry_at: dict[str, float] = {}
        self._pod_ips = itertools.islice(ipaddress.ip_network("10.2.0.0/16").hosts(), 10, None)
        self.mount_warned: set[str] = set()

    def build_rules(self) -> list[Rule]:
        return [
            Rule("admit", "pods", self._admittable, self.admit),
            Rule(
                "start-containers",
                "pods",
                self._startable,
                self.start_containers,
                delay=lambda p: p.image_pull + p.container_start,
            ),
        ]

    def extra_watches(self) -> tuple[str, ...]:
        return ("nodes", "csidrivers.storage.k8s.io")

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key in ("nodes", "csidrivers.storage.k8s.io"):
            return [
                ("pods", p["metadata"]["namespace"], p["metadata"]["name"])
                for p in self.store.items("pods")
                if _waiting_creating(p)
            ]
        return []

    def deleted(self, event: WatchEvent) -> None:
        if event.key != "pods":
            return
        uid = event.obj["metadata"]["uid"]
        for key in [k for k in self.tasks if k[0] == uid]:
            self.tasks.pop(key).cancel()
        self.pull_started.pop(uid, None)
        self.pull_retry_at.pop(uid, None)
        self.server.logs.forget_pod(
            event.obj["metadata"]["namespace"], event.obj["metadata"]["name"]
        )
        self.server.files.forget(pod_volume(event.obj) + "/")

    # -- predicates --------------------------------------------------------------------

    @staticmethod
    def _admittable(pod: Obj) -> bool:
        status = pod.get("status") or {}
        return (
            bool(pod["spec"].get("nodeName"))
            and status.get("phase", "Pending") == "Pending"
            and not status.get("containerStatuses")
            and not pod["metadata"].get("deletionTimestamp")
        )

    def _startable(self, pod: Obj) -> bool:
        if pod["metadata"].get("deletionTimestamp") or not _waiting_creating(pod):
            return False
        node = self.store.get("nodes", "", pod["spec"]["nodeName"])
        return node is not None and is_ready(node)

    # -- lifecycle ---------------------------------------------------------------------

    def admit(self, pod: Obj) -> None:
        node = self.store.get("nodes", "", pod["spec"]["nodeName"])
        host_ip = next(
            (
                a["address"]
                for a in ((node or {}).get("status") or {}).get("addresses") or []
                if a["type"] == "InternalIP"
            ),
            "10.1.0.1",
        )
        status = clone(pod.get("status") or {})
        pod_ip = str(next(self._pod_ips))
        status.update(
            phase="Pending",
            hostIP=host_ip,
            hostIPs=[{"ip": host_ip}],
            podIP=pod_ip,
            podIPs=[{"ip": pod_ip}],
            startTime=now_iso(),
        )
        set_condition(status, "PodReadyToStartContainers", "True", probe=True)
        set_condition(status, "Initialized", "True", probe=True)
        set_condition(
            status,
            "Ready",
            "False",
            "ContainersNotReady",
            "containers with unready status",
            probe=True,
        )
        set_condition(
            status,
            "ContainersReady",
            "False",
            "ContainersNotReady",
            "containers with unready status",
            probe=True,
        )
        status["containerStatuses"] = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}},
                "lastState": {},
            }
            for c in pod["spec"].get("containers") or []
        ]
        pod["status"] = status
        self.update_status("pods", pod)
        self.pull_started[pod["metadata"]["uid"]] = asyncio.get_running_loop().time()
        for c in pod["spec"].get("containers") or []:
            self.event(pod, "Pulling", f'Pulling image "{c.get("image", "")}"')

    def _mount_problem(self, pod: Obj) -> str | None:
        for vol in pod["spec"].get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            driver = (vol.get("csi") or {}).get("driver")
            if claim:
                pvc = self.store.get("persistentvolumeclaims", pod["metadata"]["namespace"], claim)
                pv_name = ((pvc or {}).get("spec") or {}).get("volumeName")
                pv = self.store.get("persistentvolumes", "", pv_name) if pv_name else None
                driver = (((pv or {}).get("spec") or {}).get("csi") or {}).get("driver")
            if driver and self.store.get("csidrivers.storage.k8s.io", "", driver) is None:
                return (
                    f'MountVolume.MountDevice failed for volume "{vol.get("name")}" : kubernetes.io/csi: '
                    f"attacher.MountDevice failed to create newCsiDriverClient: driver name {driver} not "
                    "found in the list of registered CSI drivers"
                )
        return None

    def start_containers(self, pod: Obj) -> None:
        loop = asyncio.get_running_loop()
        uid = pod["metadata"]["uid"]
        extra = max(
            (
                self.server.faults.extra_pull_time(c.get("image", ""))
                for c in pod["spec"].get("containers") or []
            ),
            default=0.0,
        )
        started = self.pull_started.setdefault(uid, loop.time())
        remaining = (
            started + self.profile.image_pull + self.profile.container_start + extra - loop.time()
        )
        if remaining > 0.01:
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            loop.call_later(remaining, self.poke, "pods", ns, name)
            return
        if self._pull_failed(pod):
            return
        problem = self._mount_problem(pod)
        if problem:
            if uid not in self.mount_warned:
                self.mount_warned.add(uid)
                self.event(pod, "FailedMount", problem, "Warning")
            return
        for c in pod["spec"].get("containers") or []:
            self.event(pod, "Pulled", f'Successfully pulled image "{c.get("image", "")}"')
            self.event(pod, "Created", f"Created container: {c['name']}")
            self.event(pod, "Started", f"Started container {c['name']}")
        status = clone(pod["status"])
        delays = {c["name"]: self._readiness_delay(c) for c in pod["spec"].get("containers") or []}
        for cs in status["containerStatuses"]:
            cs.update(
                ready=delays.get(cs["name"], 0.0) <= 0,
                started=True,
                state={"running": {"startedAt": now_iso()}},
                containerID=_container_id(pod, cs["name"], 0),
                imageID=f"{cs['image']}@sha256:{hashlib.sha256(cs['image'].encode()).hexdigest()}",
            )
        status["phase"] = "Running"
        self._ready_conditions(status)
        pod["status"] = status
        self.update_status("pods", pod)
        loop = asyncio.get_running_loop()
        for c in pod["spec"].get("containers") or []:
            self._launch(pod, c)
            if delays[c["name"]] > 0:
                loop.call_later(
                    delays[c["name"]],
                    self._become_ready,
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    uid,
                    c["name"],
                )

    def _pull_failed(self, pod: Obj) -> bool:
        """Report failing pulls (ErrImagePull, then ImagePullBackOff) and retry after a back-off."""
        failures = {
            c["name"]: (c.get("image", ""), msg)
            for c in pod["spec"].get("containers") or []
            if (msg := self.server.faults.pull_failure(c.get("image", ""))) is not None
        }
        if not failures:
            return False
        loop = asyncio.get_running_loop()
        uid = pod["metadata"]["uid"]
        if loop.time() < self.pull_retry_at.get(uid, 0.0):
            return True  # backing off: the scheduled retry pokes the pod
        backoff = self.profile.image_pull * 5
        self.pull_retry_at[uid] = loop.time() + backoff
        status = clone(pod["status"])
        for cs in status["containerStatuses"]:
            if cs["name"] not in failures:
                continue
            image, msg = failures[cs["name"]]
            before = (cs.get("state") or {}).get("waiting", {}).get("reason")
            reason = "ImagePullBackOff" if before == "ErrImagePull" else "ErrImagePull"
            text = f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": {msg}'
            if reason == "ImagePullBackOff":
                text = f'Back-off pulling image "{image}": ErrImagePull: {text}'
            cs["state"] = {"waiting": {"reason": reason, "message": text}}
            self.event(pod, "Failed" if reason == "ErrImagePull" else "BackOff", text, "Warning")
        pod["status"] = status
        self.update_status("pods", pod)
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        asyncio.get_running_loop().call_later(
            self.profile.image_pull * 5, self.poke, "pods", ns, name
        )
        return True

    def _readiness_delay(self, container: Obj) -> float:
        """A readiness probe passes after its initialDelaySeconds (plus one period), scaled by the
        time profile: a vLLM server probed after 120 s is ready in 1.2 s under `fast`."""
        probe = container.get("readinessProbe") or container.get("startupProbe")
        if not isinstance(probe, dict):
            return 0.0
        seconds = float(probe.get("initialDelaySeconds", 0)) + float(probe.get("periodSeconds", 10))
        return seconds * self.profile.container_start / REAL.container_start

    def _become_ready(self, ns: str, name: str, uid: str, cname: str) -> None:
        current = self.store.get("pods", ns, name)
        if (
            current is None
            or current["metadata"]["uid"] != uid
            or current["metadata"].get("deletionTimestamp")
        ):
            return
        pod = clone(current)
        for cs in pod["status"].get("containerStatuses") or []:
            if cs["name"] == cname and "running" in (cs.get("state") or {}):
                cs["ready"] = True
        self._ready_conditions(pod["status"])
        self.update_status("pods", pod)

    def _launch(self, pod: Obj, container: Obj) -> None:
        program = program_for(
            pod,
            container,
            self.profile,
            self.server.files,
            lambda path: locate(self.store, self.server.cluster, pod, container, path),
            reporter_for(
                self.server,
                pod,
                container,
                lambda line: self.server.logs.write(
                    pod["metadata"]["namespace"], pod["metadata"]["name"], container["name"], line
                ),
            ),
        )
        key = (pod["metadata"]["uid"], container["name"])
        old = self.tasks.pop(key, None)
        if old is not None:
            old.cancel()
        self.tasks[key] = asyncio.get_running_loop().create_task(
            self._run(
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
                pod["metadata"]["uid"],
                container["name"],
                program,
            )
        )

    async def _run(self, ns: str, name: str, uid: str, cname: str, program: Program) -> None:
        logs = self.server.logs
        for line in program.start_lines:
            logs.write(ns, name, cname, line)
        for delay, line in program.timeline:
            if delay > 0:
                await asyncio.sleep(delay)
            logs.write(ns, name, cname, line)
        if program.body is not None:
            await program.body(lambda line: logs.write(ns, name, cname, line))
        elif program.step_line is not None:
            step = 0
            while program.steps is None or step < program.steps:
                await asyncio.sleep(program.interval)
                step += 1
                if program.hang_after is None or step <= program.hang_after:
                    logs.write(ns, name, cname, program.step_line(step))
                    self._stepped(ns, name, cname, step, program.interval)
            logs.write(ns, name, cname, "[sim] training finished")
        elif program.duration is None:
            await asyncio.Event().wait()
        elif program.duration > 0:
            await asyncio.sleep(program.duration)
        self.tasks.pop((uid, cname), None)
        self.container_exited(
            ns,
            name,
            uid,
            cname,
            program.exit_code,
            "Completed" if program.exit_code == 0 else "Error",
        )

    def _stepped(self, ns: str, name: str, cname: str, step: int, interval: float) -> None:
        """A training step drives the GPUs and EFA devices of the container (sim.k8s.telemetry)."""
        pod = self.store.get("pods", ns, name)
        container = next(
            (c for c in (pod or {}).get("spec", {}).get("containers") or [] if c["name"] == cname),
            None,
        )
        if pod is not None and container is not None:
            self.server.telemetry.stepped(pod, container, step, interval)

    @staticmethod
    def _ready_conditions(status: Obj) -> None:
        statuses = status.get("containerStatuses") or []
        ready = bool(statuses) and all(s.get("ready") for s in statuses)
        if ready:
            set_condition(status, "ContainersReady", "True", probe=True)
            set_condition(status, "Ready", "True", probe=True)
        else:
            reason = "PodCompleted" if status.get("phase") in TERMINAL else "ContainersNotReady"
            names = ",".join(s["name"] for s in statuses if not s.get("ready"))
            message = (
                "" if reason == "PodCompleted" else f"containers with unready status: [{names}]"
            )
            set_condition(status, "ContainersReady", "False", reason, message, probe=True)
            set_condition(status, "Ready", "False", reason, message, probe=True)

    def container_exited(
        self, ns: str, name: str, uid: str, cname: str, code: int, reason: str
    ) -> None:
        current = self.store.get("pods", ns, name)
        if (
            current is None
            or current["metadata"]["uid"] != uid
            or current["metadata"].get("deletionTimestamp")
        ):
            return
        pod = clone(current)
        status = pod["status"]
        if status.get("phase") in TERMINAL:
            return
        self.server.logs.stop(ns, name, cname)
        policy = pod["spec"].get("restartPolicy", "Always")
        restart = policy == "Always" or (policy == "OnFailure" and code != 0)
        for cs in status.get("containerStatuses") or []:
            if cs["name"] != cname:
                continue
            started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now_iso())
            terminated = {
                "exitCode": code,
                "reason": reason,
                "startedAt": started,
                "finishedAt": now_iso(),
                "containerID": cs.get("containerID", ""),
            }
            cs["ready"] = False
            cs["started"] = False
            if restart:
                cs["lastState"] = {"terminated": terminated}
                cs["state"] = {
                    "waiting": {
                        "reason": "CrashLoopBackOff" if code else "Completed",
                        "message": f"back-off restarting failed container {cname}",
                    }
                }
            else:
                cs["state"] = {"terminated": terminated}
        if not restart:
            done = [
                ((cs.get("state") or {}).get("terminated"))
                for cs in status.get("containerStatuses") or []
            ]
            if all(done):
                status["phase"] = (
                    "Succeeded" if all(d and d.get("exitCode") == 0 for d in done) else "Failed"
                )
        self._ready_conditions(status)
        self.update_status("pods", pod)
        if code != 0:
            self.event(
                pod,
                "BackOff" if restart else "Failed",
                f"container {cname} exited with code {code}",
                "Warning",
            )
        if restart:
            restarts = next(
                (
                    cs.get("restartCount", 0)
                    for cs in status["containerStatuses"]
                    if cs["name"] == cname
                ),
                0,
            )
            backoff = self.profile.container_start * min(2**restarts, 32)
            asyncio.get_running_loop().call_later(backoff, self._restart, ns, name, uid, cname)

    def _restart(self, ns: str, name: str, uid: str, cname: str) -> None:
        current = self.store.get("pods", ns, name)
        if (
            current is None
            or current["metadata"]["uid"] != uid
            or current["metadata"].get("deletionTimestamp")
        ):
            return
        pod = clone(current)
        if pod["status"].get("phase") in TERMINAL:
            return
        container = next((c for c in pod["spec"]["containers"] if c["name"] == cname), None)
        if container is None:
            return
        delay = self._readiness_delay(container)
        for cs in pod["status"].get("containerStatuses") or []:
            if cs["name"] == cname:
                cs["restartCount"] = cs.get("restartCount", 0) + 1
                cs.update(
                    ready=delay <= 0,
                    started=True,
                    state={"running": {"startedAt": now_iso()}},
                    containerID=_container_id(pod, cname, cs["restartCount"]),
                )
        self._ready_conditions(pod["status"])
        self.update_status("pods", pod)
        self.server.logs.restart(ns, name, cname)
        # the new container instance starts from a fresh filesystem (mounted volumes stay)
        self.server.files.forget(f"{pod_volume(pod)}/rootfs/{cname}")
        self.event(pod, "Started", f"Started container {cname}")
        self._launch(pod, container)
        if delay > 0:
            asyncio.get_running_loop().call_later(delay, self._become_ready, ns, name, uid, cname)

    # -- faults ------------------------------------------------------------------------

    def crash(self, ns: str, name: str, container: str | None, code: int, reason: str) -> None:
        pod = self.store.get("pods", ns, name)
        if pod is None:
            raise KeyError(f"pod {ns}/{name} not found")
        cname = container or pod["spec"]["containers"][0]["name"]
        task = self.tasks.pop((pod["metadata"]["uid"], cname), None)
        if task is not None:
            task.cancel()
        self.container_exited(ns, name, pod["metadata"]["uid"], cname, code, reason)

    def fail_pod(
        self,
        ns: str,
        name: str,
        reason: str,
        message: str,
        disruption: str = "DeletionByTaintManager",
    ) -> None:
        """The whole pod is lost: its node died or was replaced (the taint manager), or the
        kubelet killed it (`TerminationByKubelet`: node-pressure eviction, a pod kill)."""
        current = self.store.get("pods", ns, name)
        if current is None:
            return
        uid = current["metadata"]["uid"]
        for key in [k for k in self.tasks if k[0] == uid]:
            self.tasks.pop(key).cancel()
        pod = clone(current)
        status = pod.setdefault("status", {})
        for cs in status.get("containerStatuses") or []:
            self.server.logs.stop(ns, name, cs["name"])
            if "terminated" not in (cs.get("state") or {}):
                cs["state"] = {
                    "terminated": {"exitCode": 137, "reason": "Error", "finishedAt": now_iso()}
                }
            cs["ready"] = False
        status.update(phase="Failed", reason=reason, message=message)
        set_condition(status, "DisruptionTarget", "True", disruption, message)
        self._ready_conditions(status)
        self.update_status("pods", pod)
        self.event(pod, reason, message, "Warning")

    def stop(self) -> None:
        super().stop()
        for task in self.tasks.values():
            with contextlib.suppress(Exception):
                task.cancel()
        self.tasks.clear()
