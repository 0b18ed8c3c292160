"""A dry run of an instance-group command is one request/reply to cluster-svc: its plan query,
which is also the verdict (each broken rule a field of the 422), and nothing else on the bus."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import nats
import pytest
from nats.aio.msg import Msg

from tests.e2e.conftest import RunningStack


class SubjectLog:
    """Every cluster-svc query subject requested while it listens (a plain subscription gets a
    copy of each request beside the service's queue group)."""

    def __init__(self, url: str) -> None:
        self.subjects: list[str] = []
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._run(url),)
        )
        self._thread.start()
        assert self._ready.wait(10), "the subject log did not connect"

    async def _run(self, url: str) -> None:
        self._stop = asyncio.Event()
        nc = await nats.connect(url)

        async def seen(msg: Msg) -> None:
            self.subjects.append(msg.subject)

        await nc.subscribe("qry.cluster.>", cb=seen)
        await nc.flush()
        self._ready.set()
        await self._stop.wait()
        await nc.drain()

    def taken(self) -> list[str]:
        subjects, self.subjects = self.subjects, []
        return subjects

    def close(self) -> None:
        stop = self._stop
        assert stop is not None
        self._loop.call_soon_threadsafe(stop.set)
        self._thread.join(10)
        self._loop.close()


@pytest.fixture
def subject_log(created_cluster: tuple[RunningStack, str]) -> Iterator[SubjectLog]:
    log = SubjectLog(created_cluster[0].nats.url)
    yield log
    log.close()


def test_a_dry_run_is_one_plan_query(
    created_cluster: tuple[RunningStack, str], subject_log: SubjectLog
) -> None:
    stack, name = created_cluster
    http = stack.client.http
    groups = f"/api/v1/clusters/{name}/instance-groups"
    dry = {"dry_run": "true"}
    gpu = stack.client.get(groups).json()[0]
    new = {"name": "dry", "instance_type": gpu["instance_type"], "count": 1}
    asked = {
        "add": http.post(groups, json=new, params=dry),
        "update": http.patch(f"{groups}/gpu", json={"count": 3}, params=dry),
        "delete": http.delete(f"{groups}/gpu", params=dry),
        "software": http.post(f"/api/v1/clusters/{name}/software-update", json={}, params=dry),
        "refused": http.patch(f"{groups}/gpu", json={"capacity_type": "spot"}, params=dry),
    }
    for what, response in asked.items():
        expected = 422 if what in ("delete", "refused") else 200
        assert response.status_code == expected, (what, response.text)
    # The two refusals carry the rules by name, from the plan alone.
    assert asked["refused"].json()["error"]["fields"][0]["rule"] == "fixed_for_group_life"
    assert asked["delete"].json()["error"]["fields"][0]["rule"] == "last_instance_group"
    assert subject_log.taken() == ["qry.cluster.plan"] * len(asked)
