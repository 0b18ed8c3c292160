"""Scale-out: two replicas of the domain service share its durable consumer; every operation
completes once, and the work is spread over both."""

from __future__ import annotations

import re
import time
from collections import Counter

from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack, unique


def test_two_replicas_share_the_work_with_nothing_duplicated(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    stack, api = running_stack.stack, running_stack.client
    stack.start_replica("cluster-svc", 1)
    log = stack.state_dir / "cluster-svc-1.log"
    deadline = time.monotonic() + 60
    while "consuming" not in log.read_text():  # the second replica has joined the consumer
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    names = [unique(f"scale{i}") for i in range(24)]
    ops = [api.post("/api/v1/storage/buckets", {"name": n}).json()["operation_id"] for n in names]
    for op in ops:
        assert api.wait(op)["status"] == "succeeded"

    creates = Counter(c["params"]["Bucket"] for c in sim_aws.call_log("s3", "CreateBucket"))
    assert all(creates[n] == 1 for n in names), {n: creates[n] for n in names}

    finished: Counter[str] = Counter()
    for replica in ("cluster-svc", "cluster-svc-1"):
        text = (stack.state_dir / f"{replica}.log").read_text()
        ids = set(re.findall(r"operation finished\s+operation_id=([0-9a-f-]{36})", text))
        finished.update({op: 1 for op in ids if op in ops})
        assert ids & set(ops), f"{replica} handled none of the operations"
    assert sorted(finished) == sorted(ops) and set(finished.values()) == {1}
