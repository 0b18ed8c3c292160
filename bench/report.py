"""docs/performance.md from bench/results/*.json: one row per figure, with its floor and ratio.

.venv/bin/python -m bench.report
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import RESULTS

DOC = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
INFRA = frozenset({"simulator", "nats", "postgres"})
LOADED = frozenset({"gateway", "cluster-svc"})  # the services the throughput load goes through

METHOD = """## How each figure is measured

| # | module | ours | floor (same run, same PostgreSQL and NATS) |
|---|---|---|---|
| 1 | `bench/accept.py` | `POST /api/v1/storage/buckets` -> 202 on the gateway alone (its outbox relay and live stream running, the audit row written with its event; commands wait in JetStream), open-loop load from another process at 50, 100, 200, 400... req/s, 2.5 s per step; each rate runs on the floor, then on the gateway, from one load process; at 50 and 200 req/s ten such rounds of 1.25 s (who goes first alternating), each side's figures pooling its rounds. Sustained = every request 202, >= 95% of the offered rate, p99 from the schedule <= 100 ms. The server's CPU per request is recorded too (`server_cpu_ms_per_request`): it moves far less with the machine's load than latency does. | a bare FastAPI endpoint (one uvicorn worker on uvloop and httptools, served like the gateway) doing one `INSERT` through asyncpg |
| 2 | `bench/pipeline.py` | a bucket create at a time on the stack as `make up` runs it, followed on `/api/v1/events/stream`: 202 -> `OperationStarted` delivered (the first progress event; split into "written" and "written -> delivered"), and 202 -> `OperationSucceeded` delivered. A bucket create is not instant (7 S3 calls in 3 stages against the simulator): the S3 share is its stages' time along the critical path (bucket, then the longer of the two concurrent stages), from the stage timestamps. | JetStream publish -> pull consumer in another process -> `INSERT` + `NOTIFY` in one transaction -> `LISTEN` receiver, one round 20 ms after each of ours (interleaved, so both see the machine in the same state) |
| 3 | `bench/pipeline.py` | 120 bucket creates, 16 in flight, until all are terminal; then a second gateway (own port, the load split over both) and a second cluster-svc (same durable consumer) via `Stack.start_replica`, and again | the same 7 S3 calls per bucket made directly with boto3, 16 threads, against the same simulator: what the simulated S3 itself sustains |
| 4 | `bench/fanout.py` | 500 subscribers of `/api/v1/events/stream` (plain asyncio sockets in another process), 30 events at 10/s (bucket creates accepted by the gateway); delivery = arrival - `occurred_at` | the same subscribers on a bare FastAPI SSE endpoint fed by one `LISTEN` connection |
| 5 | `bench/logs.py` | a training job submitted through REST on the stack as `make up` runs it; pods of the job print numbered lines; one WebSocket client (`/api/v1/clusters/{name}/jobs/{job}/logs/ws`) follows every pod to its end: emulator pod log API -> workload-svc (log pages over NATS) -> gateway -> client, checking that every line arrives once and in order | `kubectl logs -f` of the same pods on the same emulator, one per pod in parallel, straight from its API server |
| 6 | `bench/workflow.py` | a full cluster creation, fast profile, `POLL_MAX_SECONDS=0.5` | the critical path of its stage durations, and their sum |
| 7 | `bench/status_lag.py` | 3 cluster creations with the product's default polling on a stack with polling only (`AWS_EVENTS_QUEUE=false`), then 3 on a stack reading SageMaker HyperPod's EventBridge events from its SQS queue (the default); the simulator runs in the bench process, its clock's tasks timestamp each state change and its HTTP front counts the describe calls and long polls; lag = our `StageSucceeded` - the change. The real profile is modelled: polling only, the backoff (0.05 s x1.5 up to 15 s) over HyperPod waits of 10 to 20 minutes; with events, the event path measured here (it does not depend on the wait's length; EventBridge's own delivery time on AWS, unpublished, is not in it) and the fallback polls (up to 60 s apart). Node health lag: 5 node failures per stack on clusters made with NodeRecovery=None (each replaced by the bench once seen), node failure -> the node watcher's recorded read (`?source=recorded`) showing it, the watcher's budget raised to 3,600 calls/h on both stacks (the default's polling lag is modelled: a check each 3600 / budget seconds once its burst is spent) | one `DescribeCluster` round trip |
| 8 | `bench/pipeline.py` | VmRSS (and PSS) of every process after one warm-up operation and 2 s idle, and the peak under the throughput load; PostgreSQL counts its postmaster and backends | a bare FastAPI + asyncpg process (uvicorn), idle |
| 25 | `bench/capacity.py` | the Kubernetes emulator in a process of its own (500 HyperPod nodes, 10 pods each, 5 pending, Kueue with one governed Job waiting on its quota); cluster-svc's capacity and pending routes (`cluster_svc.areas.capacity`, `.governance`, built as bootstrap builds them, the official client) answer from the cluster's watched model (list + watch of Nodes and Pods, `adapters/capacity_watch.py`), started by a first read that is recorded apart; measured once the emulator answers a GET of the Job within 25 ms five times in a row, or after 300 s (the 500-node emulator did not get there in the recorded run: its own controllers keep it busy). The pending read still makes its own Kubernetes calls (the Job, the Kueue objects, the namespace's events) | the same routes on a 10-node, 100-pod cluster in the same run; `limit=10` reads the same number of nodes on both sizes |
| 28 | `bench/scale.py` | the stack as `make up` runs it, its read model filled directly (50 imported clusters, 1,000 and 10 recorded nodes, 10,000 and 100 jobs, 100 endpoints); 200 reads of a jobs page by its page token spread over the list and 200 reads of the recorded node list, interleaved with the floor's; the cluster page in Debian's Chromium (Playwright), signed in once, median of 5 full loads, every node read of the page sent to the read model (`source=recorded`). Then, on a stack of its own, a live fleet: 50 clusters created through `POST /api/v1/clusters` (5 at a time; 49 of 2 nodes, then one of 1,000), the watchers at their shipped defaults; VmRSS and PSS of every process sampled each second through the build (after 10, 25 and 49 clusters: the growth per cluster), a 2-minute warm-up, then 15 idle minutes (steady: their median), then three reads of every list of the fleet (each cluster, its live and recorded nodes, its capacity, its jobs; endpoints; the fleet's capacity) and a minute after; the AWS calls of the 15 idle minutes from the account's call bucket (`aws_call_buckets`, which every AWS call of every service spends from) | the 100-job page; the 10-node cluster's node list and cluster page; 0 AWS calls for an idle fleet |

All load is on loopback; the load generators run in their own processes.
"""

PROFILED = """## What profiling found, and what changed

Profiles with py-spy (`py-spy record -r 200 -f raw` on the gateway, cluster-svc and the
simulator under the load of items 1-3), each change measured before and after:

| change | before | after |
|---|---|---|
| consumer: operation locks on pooled connections instead of a new connection per command (`shared/consumer.py`) | 11.0 ms per command to open the lock connection (with its JSON codecs) | 0.26 ms (pooled acquire + `pg_try_advisory_lock` + release) |
| operations: one statement per event and per outbox row instead of 5 and 2 (`shared/operations.py`) | accept transaction 11 round trips; `create_operation` p50 3.70 ms | 6 round trips; 3.37 ms (360 interleaved runs each) |
| service: 10 threads for blocking SDK calls instead of the default cores + 4 = 6 (`shared/service.py`) | bucket creates, 16 in flight, 1 replica: 5.9 ops/s | 10.6 ops/s (with the two changes above) |
| gateway: request dependencies as coroutines, not `def`s run in a worker thread each (`services/gateway/gateway/deps.py`) | 3.0 ms of gateway CPU per accept (interleaved runs at 100 req/s) | 2.65 ms |
| live stream: no task and timer per event per subscriber; keep-alives from the broadcaster (`services/gateway/gateway/stream.py`, `routes/events.py`) | 500 subscribers, two runs: p50 49.9 / 83.2 ms, p99 121.9 / 160.6 ms | interleaved with them: p50 41.4 / 60.3 ms, p99 99.6 / 130.9 ms |
| the first three, item 2 (202 -> `OperationStarted` delivered, p50), consecutive runs | 23.8 ms, floor 2.2 ms (10.7x) | 13.6 ms, floor 1.6 ms (8.6x) |
| the first three, item 3 (1 replica), consecutive runs | 6.5 ops/s, floor 25 ops/s (0.26) | 13.3 ops/s, floor 38 ops/s (0.35) |
| accepts: one statement per operation (its own transaction) instead of BEGIN, 3 statements and COMMIT; under load, concurrent accepts share one transaction and one WAL flush (`AcceptQueue` in `services/gateway/gateway/accept.py`, `persist_operations` in `shared/operations.py`). `pg_stat_activity` sampled every 20 ms at 200-400 req/s: before, 80-90% of the samples of busy backends were waits on the event-order lock, held across round trips to the gateway and through each COMMIT's flush | item 1 at 200 req/s: p50 904 ms, p99 1967 ms; highest sustained 100 req/s | back to back: p50 6.4 ms (floor 5.8 ms, 1.11x), p99 32 ms; sustained 200 req/s |
| gateway: routes added flat instead of as included routers, which FastAPI 0.165 re-resolves on every request (`services/gateway/gateway/app.py`; the OpenAPI document is byte-identical) | route matching 28.6% of the gateway's samples under item 1's load | 4.4% |
| gateway: one token lookup at a time per token; requests arriving while it runs share it (`gateway/auth.py`) | every request after the cache's expiry queried `api_tokens` (a burst of lookups each time under load) | one lookup per token per expiry |
| workload-svc: the SageMaker client made on first use (`workload_svc/adapters/sagemaker.py`) | idle RSS 125 MB (SageMaker's service model alone: +22 MB) | 84 MB |
| pipeline: the consumer's inbox check and operation lock in one round trip (`shared/consumer.py`); an operation starts in one statement instead of four (`shared/stages.py`); an event that fits in its NOTIFY payload travels in it, so the live stream delivers it without reading the table (`shared/operations.py`, `gateway/stream.py`); JSON codecs through orjson (`shared/db.py`) | item 2, back to back: 202 -> `OperationStarted` delivered p50 7.78 ms (floor 2.38 ms, 3.27x); of which written -> delivered 5.09 ms | 6.26 ms (floor 2.75 ms, 2.28x); written -> delivered 2.94 ms |
| relays: each wakes only for the rows its own process queued (the `outbox` notification carries the writer's `application_name`); the others' 1 s poll publishes what a stopped process left (`shared/outbox.py`, `shared/db.py`). Timestamps in every process, relative to the accept's COMMIT, showed every event waking all four relays (gateway and three services), three of which ran BEGIN, an empty SELECT and COMMIT, on 2 cores, while the command was on its way | item 2, traced (p50 after the COMMIT): 202 at the client 3.08 ms, `OperationStarted` at the client 8.25 ms | 1.88 ms, 6.80 ms |
| gateway: an accepted batch's commands and events are published as soon as it commits (`AcceptQueue`, `OutboxRelay.publish_committed`), their rows deleted after; the relay's drain is left with what this could not publish | traced: the command reached cluster-svc 3.10 ms after the COMMIT (relay woken, BEGIN, claim, publish) | 2.18 ms |
| pooled connections go back without asyncpg's reset query (`SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`, a round trip on every release): they keep no session state; LISTEN and session locks have their own connections (`shared/db.py`) | item 2 before the three rows above, two consecutive runs: p50 4.64 / 4.80 ms (floor 1.70 / 1.73 ms) | after them: 3.44 / 3.51 ms (floor 2.24 / 2.12 ms) |
| accepts: with nothing in flight the operation is written in the request's own task, not handed to the writer task (`AcceptQueue.submit`) | item 1 at 200 req/s, 3 interleaved rounds in each of two runs: p50 2.05-2.84 ms (floor 1.21-2.08 ms) | 1.51-1.75 ms (floor 1.02-1.49 ms) |
| gateway: a route rejects a path outside its static prefix with one string comparison before its regular expression runs (`gateway/routing.py`; the OpenAPI document is byte-identical) | scanning the 78 routes to the bucket create's (the 70th): 60 us | 35 us |
| stage engine: an operation whose workflow has no `on_start` hook starts with its `OperationStarted` event in one statement, its own transaction, the attempt read with the consumer's lock (`_START_AND_EVENT` in `shared/stages.py`); not on item 2's path (the bucket create has a hook) | the start as BEGIN, start, event, COMMIT: p50 1.47 ms (550 interleaved starts of a two-stage workflow, in isolation) | 1.13 ms |
| gateway: served on uvloop with the httptools parser instead of asyncio's loop and h11 (`SERVER_OPTIONS` in `gateway/app.py`; the accept floor is served the same way). Measured on a machine half as fast as the rows above | item 1, h11 on both sides: p50 at 200 req/s 8.41 ms (floor 3.49 ms, 2.41x); gateway CPU 7.7 ms per accept at 50 req/s | uvloop on both sides: 4.60 ms (floor 2.54 ms, 1.81x); 6.5 ms |
| audit subscriber (since removed: the audit row is now written with its event by `write_event`): after a batch that did not fill it waits 0.25 s, so trickling events go into one fetch and one INSERT instead of a fetch, an INSERT and an ack round each (`gateway/audit.py`); rows published after commit are deleted together every 0.1 s, and a drain leaves them alone meanwhile (`shared/outbox.py`) | CPU per accept at 50 req/s, gateway alone: gateway 7.35 ms, nats-server 1.35 ms (at 200 req/s: 4.43 ms) | gateway 4.85 ms, nats-server 0.80 ms (3.78 ms) |
| gateway: the role and source dependencies read their headers from the request (two declared header parameters and one nested dependency less per mutation; neither header is in the API reference); the command is dumped once per accept and envelopes serialize in pydantic's core; a bucket name is parsed as an IPv4 address only when it is digits and dots | the bucket create through the app in-process, database stubbed (best of 10 rounds): 549 us (floor's app 128 us) | 443 us (125 us) |
| gateway: a route index first in the scan finds a request's candidate routes by the prefixes of its path, one lookup per '/', and tries them in the app's order (`RouteIndex` in `gateway/routing.py`; the OpenAPI document is byte-identical) | matching the bucket create's route (the 70th of 78): 85-90 us; the create in-process 443 us | 11 us; 375 us |
| services: libraries a service never uses are kept out of its process (`shared/slim.py`: aiohttp, which nats-py imports for a WebSocket transport, and rich, which structlog imports for console tracebacks); the gateway imports its OIDC libraries only when OIDC is configured. Measured on a machine about 2.5 times as fast as the two rows above, as are the rows below | idle RSS after one operation: gateway 97.8 MB, cluster-svc 99.9, workload-svc 83.9, inference-svc 84.3 | 72.9, 90.2, 71.8, 73.4 MB |
| gateway: a route that accepts operations has one dependency (`mutation` in `gateway/deps.py`) reading the pool, the caller, the source, `Idempotency-Key` and `?dry_run` from the request, instead of three dependencies and two declared parameters (`PrefixedRoute` lists both parameters in the API reference); FastAPI's native OpenTelemetry, which records nothing without the OpenTelemetry SDK, is off | the bucket create in-process, database stubbed (best of 10): 145 us (floor's app 50 us); item 1, `make bench` at the start of this round: 1.60x at 50 req/s, 1.57x at 200 req/s | 113 us; 1.49x, 1.48x |
| services: cluster-svc, workload-svc and inference-svc run on uvloop, as the gateway does (`shared.service.run`) | 240 bucket creates, 16 in flight, back to back: cluster-svc 14.1 ms of CPU per operation, 42.7 ops/s | 13.6 ms, 43.6 ops/s |
| gateway: the accept queue writes through its own connection (no pool acquire and release, whose release is a task hand-over, per batch), and the `OperationAccepted` event is announced after the answer, in-process to the gateway's own live stream and by one NOTIFY per batch to the others, instead of notified inside the accept's commit (`AcceptQueue` in `gateway/accept.py`). Timestamps in the gateway at 200 req/s on a machine slower again than the rows above: the statement took 0.90 ms and the request 1.7 ms; the statement alone, paced at 200/s: 1.11 ms with the NOTIFY, 0.99 ms without (the commit signals the listening backend, which wakes the gateway's listener while the answer is on its way) | item 1 at 200 req/s, 9 interleaved rounds each: 1.61x (p50 1.47 ms, floor 0.92 ms) | 1.19x (1.45 ms, floor 1.21 ms); `make bench` after: 1.32x at 50 req/s, 1.31x at 200 req/s |
| bench, item 1: the goal rates run ten alternating rounds of 1.25 s from one load process, each side's figures pooled over its rounds, instead of five rounds of 2.5 s each from a new process, each side keeping its median round. The machine's speed drifted by up to 2x between rounds (the floor's p50 went from 0.71 to 1.39 ms within one run), which fell unevenly on the two sides | the ratio of a pair of rounds at 200 req/s, one run (9 pairs, the previous gateway): 1.01x to 2.51x | this run: 1.05x to 1.57x per pair, 1.31x pooled |

The machine's load moved a lot between runs (load average 4 to 12 on 2 cores, from other
work), which is why every figure above comes with its floor from the same run.

What remains, in order of cost:

- **A command's path has more round trips than its floor** (item 2): the consumer's inbox
  check and lock, then the start transaction (BEGIN, start, the workflow's own read-model
  update, `OperationStarted`, COMMIT) where the floor has BEGIN, one insert and COMMIT; and the
  event reaches the client through the gateway's live stream where the floor's receiver listens
  on PostgreSQL itself. Publishing straight from the accept path had shown no gain while every
  event woke four relays; with the relays quiet it took a millisecond off the path.
- **An accept still costs about a third more than its floor** (item 1: 1.31x to 1.33x). Paced
  at 200/s, where every request meets cold caches, the accept's statement takes about 0.3 ms
  more than the floor's insert (the operation row with its four indexes, the event under the
  event-order lock, two outbox rows); the rest of the difference, about 0.2 ms, is the
  gateway's longer Python path: authentication, the metrics middleware, the route index and
  building the operation with its two envelopes. Warm, the whole difference is about a third
  of that.
- **Event order is still a lock held through COMMIT** for every event-writing transaction
  (`seq` = commit order). Accepts now pay it once per batch; a stage update pays it per
  transaction, which is fine at the rate stages change. If it ever limits, the next design is
  a single sequencer assigning `seq` to committed events in batches.
- **Events set HyperPod's status lag, polling EKS's**: a polled wait's lag is where the change
  falls in the backoff (0.05 s growing x1.5 to `POLL_MAX_SECONDS`): tens to hundreds of
  milliseconds in the fast profile, up to 15 s for real waits at about 5 describe calls per
  minute. A HyperPod creation's wait ends on SageMaker's "Cluster State Change" event instead
  (EventBridge -> cluster-svc's SQS queue, long-polled -> the waiting replica over NATS), tens
  of milliseconds after the change whatever the wait's length, and polls only every 60 s
  meanwhile; EKS sends no cluster state change to EventBridge, so its waits still poll.
- **Node health events set the recorded nodes' lag**: polling, a node failure is recorded at
  the watcher's next round the budget affords (5 s rounds here, and the failures follow a round,
  so about one whole round; 3600 / budget seconds at the default budget once its burst is spent). With
  HyperPod's "Cluster Node Health Event" the receiving replica reads the cluster at once: a
  quarter to three quarters of a second here, most of it the full read (nodes, DescribeCluster,
  the newest event, Kubernetes) and the recorded write.
- **The bucket create's S3 calls run through 10 threads of boto3** in cluster-svc; the
  simulator's S3 alone sustains more than the pipeline completes. A second replica of each
  service adds processes to the same 2 cores (and `make up` now runs four services), so it
  does not raise the rate here: replicas are for availability on this machine, and for
  throughput only with cores to spread over.

## Running

`make bench` runs everything (`python -m bench`); `python -m bench --only accept,fanout` runs
some and rewrites the table from the latest results; `python -m bench --report-only` only
rewrites the table. Each module also runs alone (`python -m bench.pipeline --help`).
"""


@dataclass(frozen=True)
class Row:
    item: str
    what: str
    ours: str
    floor: str
    ratio: str
    goal: str
    met: str


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value >= 10 else f"{value:.2f} ms"


def _ratio(ours: float, floor: float) -> str:
    if not floor or math.isnan(ours) or math.isnan(floor):
        return "-"
    return f"{ours / floor:.2f}x"


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _missing(item: str, what: str, name: str) -> Row:
    return Row(item, what, f"no result (bench/results/{name}.json)", "-", "-", "-", "-")


def rows() -> list[Row]:
    out: list[Row] = []
    accept = _load("accept")
    if accept is None:
        out.append(_missing("1", "accept latency", "accept"))
    else:
        s = accept["summary"]
        ratio = s["p50_ms_at_200"] / s["floor_p50_ms_at_200"]
        out += [
            Row(
                "1",
                "accept POST -> 202, p50 at 50 req/s",
                _ms(s["p50_ms_at_50"]),
                _ms(s["floor_p50_ms_at_50"]),
                _ratio(s["p50_ms_at_50"], s["floor_p50_ms_at_50"]),
                "ratio <= 1.5",
                _met(s["p50_ms_at_50"] / s["floor_p50_ms_at_50"] <= 1.5),
            ),
            Row(
                "1",
                "accept POST -> 202, p50 at 200 req/s",
                _ms(s["p50_ms_at_200"]),
                _ms(s["floor_p50_ms_at_200"]),
                _ratio(s["p50_ms_at_200"], s["floor_p50_ms_at_200"]),
                "ratio <= 1.5",
                _met(ratio <= 1.5),
            ),
            Row(
                "1",
                "accept POST -> 202, p99 at 200 req/s",
                _ms(s["p99_ms_at_200"]),
                _ms(s["floor_p99_ms_at_200"]),
                _ratio(s["p99_ms_at_200"], s["floor_p99_ms_at_200"]),
                "p99 <= 20 ms",
                _met(s["p99_ms_at_200"] <= 20),
            ),
            Row(
                "1",
                "highest sustained accept rate (2 cores)",
                f"{s['highest_sustained_rate']:.0f} req/s",
                f"{s['floor_highest_sustained_rate']:.0f} req/s",
                _ratio(s["floor_highest_sustained_rate"], s["highest_sustained_rate"])
                if s["highest_sustained_rate"]
                else "-",
                "-",
                "-",
            ),
        ]
    pipeline = _load("pipeline")
    if pipeline is None:
        out.append(_missing("2", "pipeline overhead", "pipeline"))
    else:
        s = pipeline["summary"]
        ours = pipeline["ours"]
        out += [
            Row(
                "2",
                "202 -> OperationStarted on the live stream, p50",
                _ms(s["accepted_to_started_p50_ms"]),
                _ms(s["floor_p50_ms"]),
                _ratio(s["accepted_to_started_p50_ms"], s["floor_p50_ms"]),
                "ratio <= 2; p50 <= 10 ms",
                _met(
                    s["accepted_to_started_p50_ms"] / s["floor_p50_ms"] <= 2
                    and s["accepted_to_started_p50_ms"] <= 10
                ),
            ),
            Row(
                "2",
                "202 -> OperationStarted on the live stream, p99",
                _ms(s["accepted_to_started_p99_ms"]),
                _ms(s["floor_p99_ms"]),
                _ratio(s["accepted_to_started_p99_ms"], s["floor_p99_ms"]),
                "-",
                "-",
            ),
            Row(
                "2",
                "click (POST sent) -> first progress event, p50 / p99",
                f"{_ms(s['click_to_started_p50_ms'])} / {_ms(ours['click_to_started_ms']['p99'])}",
                "-",
                "-",
                "-",
                "-",
            ),
            Row(
                "2",
                "202 -> terminal event delivered (bucket create), p50 / p99",
                f"{_ms(s['accepted_to_terminal_p50_ms'])} / "
                f"{_ms(ours['accepted_to_terminal_ms']['p99'])}",
                f"S3 stages {_ms(s['s3_p50_ms'])}",
                "-",
                "-",
                "-",
            ),
            Row(
                "2",
                "of which ours (total minus S3 stage time), p50 / p99",
                f"{_ms(s['ours_excluding_s3_p50_ms'])} / {_ms(s['ours_excluding_s3_p99_ms'])}",
                _ms(s["floor_p50_ms"]),
                _ratio(s["ours_excluding_s3_p50_ms"], s["floor_p50_ms"]),
                "-",
                "-",
            ),
        ]
    throughput = _load("throughput")
    if throughput is None:
        out.append(_missing("3", "throughput", "throughput"))
    else:
        s = throughput["summary"]
        for n, key in ((1, "ops_per_second_1"), (2, "ops_per_second_2")):
            out.append(
                Row(
                    "3",
                    f"bucket creates completed end to end, {n} replica{'s' if n > 1 else ''}"
                    " per service",
                    f"{s[key]:.1f} ops/s",
                    f"{s['floor_ops_per_second']:.1f} ops/s (S3 calls alone)",
                    f"{s[key] / s['floor_ops_per_second']:.2f} of floor",
                    "-",
                    "-",
                )
            )
    fanout = _load("fanout")
    if fanout is None:
        out.append(_missing("4", "fan-out", "fanout"))
    else:
        s = fanout["summary"]
        n = fanout["ours"]["subscribers"]
        out += [
            Row(
                "4",
                f"live stream, {n} subscribers: delivery p99 ({s['delivered']} delivered)",
                _ms(s["p99_ms"]),
                _ms(s["floor_p99_ms"]),
                _ratio(s["p99_ms"], s["floor_p99_ms"]),
                "p99 <= 100 ms",
                _met(s["p99_ms"] <= 100),
            ),
            Row(
                "4",
                f"live stream, {n} subscribers: delivery p50",
                _ms(s["p50_ms"]),
                _ms(s["floor_p50_ms"]),
                _ratio(s["p50_ms"], s["floor_p50_ms"]),
                "-",
                "-",
            ),
        ]
    logs = _load("logs")
    if logs is None or "floor_lines_per_second" not in logs:
        out.append(_missing("5", "log streaming", "logs"))
    else:
        rate, floor = logs["lines_per_second_per_job"], logs["floor_lines_per_second"]
        out.append(
            Row(
                "5",
                f"log streaming, {logs['pods']} pods x {logs['lines_per_pod']} lines to a"
                " WebSocket client (every line once, in order)",
                f"{rate:,} lines/s",
                f"{floor:,} lines/s (`kubectl logs -f`)",
                f"{rate / floor:.2f} of floor",
                ">= 10,000 lines/s per job",
                _met(rate >= 10_000),
            )
        )
    workflow = _load("workflow")
    if workflow is None:
        out.append(_missing("6", "workflow critical path", "workflow"))
    else:
        m = workflow["median"]
        out += [
            Row(
                "6",
                "cluster creation (fast profile) vs its critical path",
                f"{m['total_seconds']:.2f} s",
                f"{m['critical_path_seconds']:.2f} s",
                f"{m['ratio_to_critical_path']:.3f}x",
                "<= 1.1x",
                _met(m["ratio_to_critical_path"] <= 1.1),
            ),
            Row(
                "6",
                "cluster creation vs the same stages one after another",
                f"{m['total_seconds']:.2f} s",
                f"{m['sequential_seconds']:.2f} s",
                _ratio(m["total_seconds"], m["sequential_seconds"]),
                "-",
                "-",
            ),
        ]
    lag = _load("status_lag")
    if lag is None:
        out.append(_missing("7", "status lag", "status_lag"))
    else:
        s = lag["summary"]
        w = lag["waits"]
        for stage, label in (
            ("eks_cluster", "EKS ACTIVE"),
            ("hyperpod_cluster", "HyperPod InService"),
        ):
            out.append(
                Row(
                    "7",
                    f"status lag, {label} -> our event (fast profile); describes/min",
                    f"{_ms(w[stage]['lag_ms'])}; {w[stage]['calls_per_minute']:.0f}/min",
                    f"{_ms(s['floor_ms'])} (one describe)",
                    _ratio(w[stage]["lag_ms"], s["floor_ms"]),
                    "-",
                    "-",
                )
            )
        if "hyperpod_events_lag_ms" in s:
            out.append(
                Row(
                    "7",
                    "status lag, HyperPod InService -> our event with EventBridge events"
                    " (fast profile, worst of the run)",
                    _ms(s["hyperpod_events_lag_ms"]),
                    f"{_ms(s['floor_ms'])} (one describe)",
                    _ratio(s["hyperpod_events_lag_ms"], s["floor_ms"]),
                    "-",
                    "-",
                )
            )
            out.append(
                Row(
                    "7",
                    "status lag, real profile HyperPod (modelled), polling only: p50 / p99;"
                    " describes/min",
                    f"{s['real_hyperpod_polling_p50_s']:.1f} / "
                    f"{s['real_hyperpod_polling_p99_s']:.1f} s; "
                    f"{s['real_hyperpod_polling_calls_per_minute']:.1f}/min",
                    "-",
                    "-",
                    "-",
                    "-",
                )
            )
            out.append(
                Row(
                    "7",
                    "status lag, real profile HyperPod with events: p50 / p99; describes/min"
                    " (+ the fleet's queue long polls)",
                    f"{s['real_hyperpod_events_p50_s']:.2f} / "
                    f"{s['real_hyperpod_events_p99_s']:.2f} s; "
                    f"{s['real_hyperpod_events_calls_per_minute']:.1f}/min"
                    f" (+{s['queue_receives_per_minute']:.0f} ReceiveMessage/min)",
                    f"{s['real_hyperpod_polling_p50_s']:.1f} s (polling only, p50)",
                    _ratio(s["real_hyperpod_events_p50_s"], s["real_hyperpod_polling_p50_s"]),
                    f"p50 <= {s['goal_p50_s']:.0f} s",
                    "met" if s["goal_met"] else "**not met**",
                )
            )
        if "node_health_events_p50_ms" in s:
            out.append(
                Row(
                    "7",
                    "node health lag, node failure -> the recorded node read (fast profile),"
                    " polling only (5 s rounds): p50 / p99",
                    f"{_ms(s['node_health_polling_p50_ms'])} / "
                    f"{_ms(s['node_health_polling_p99_ms'])}",
                    "-",
                    "-",
                    "-",
                    "-",
                )
            )
            out.append(
                Row(
                    "7",
                    "node health lag with node health events: p50 / p99",
                    f"{_ms(s['node_health_events_p50_ms'])} / "
                    f"{_ms(s['node_health_events_p99_ms'])}",
                    f"{_ms(s['node_health_polling_p50_ms'])} (polling only, p50)",
                    _ratio(s["node_health_events_p50_ms"], s["node_health_polling_p50_ms"]),
                    "-",
                    "-",
                )
            )
            out.append(
                Row(
                    "7",
                    "node health lag, real default budget"
                    f" ({s.get('real_node_budget_calls_per_hour', 60):g} calls/h, modelled),"
                    " polling only: p50 / p99",
                    f"{s['real_node_health_polling_p50_s']:.1f} / "
                    f"{s['real_node_health_polling_p99_s']:.1f} s",
                    "-",
                    "-",
                    "-",
                    "-",
                )
            )
        if "hyperpod_events_lag_ms" not in s:
            model = w["hyperpod_cluster"]["real_profile_model"]
            out.append(
                Row(
                    "7",
                    "status lag, real profile (same backoff, modelled): lag; describes/min",
                    f"<= 15 s ({model['lag_seconds']:.1f} s at 15 min); "
                    f"{model['calls_per_minute']:.1f}/min",
                    "-",
                    "-",
                    "-",
                    "-",
                )
            )
    memory = _load("memory")
    if memory is None:
        out.append(_missing("8", "memory", "memory"))
    else:
        s = memory["summary"]
        idle = memory["idle"]
        peak = memory["peak_under_load_1_replica"]
        for service in sorted(n for n in idle if n not in INFRA):
            mb = idle[service]["rss_mb"]
            loaded = "" if service not in LOADED else f" / {peak.get(service, 0.0):.0f}"
            out.append(
                Row(
                    "8",
                    f"RSS {service}: idle{' / peak under load' if loaded else ''}",
                    f"{mb:.0f}{loaded} MB",
                    f"{s['floor_idle_mb']:.0f} MB (bare FastAPI+asyncpg, idle)",
                    _ratio(mb, s["floor_idle_mb"]),
                    "<= 100 MB idle",
                    _met(mb <= 100),
                )
            )
        parts = ", ".join(f"{name} {v['rss_mb']:.0f}" for name, v in sorted(idle.items()))
        out.append(
            Row(
                "8",
                f"whole embedded stack idle, RSS (PSS) in MB: {parts}",
                f"{s['whole_stack_idle_rss_mb']:.0f} MB ({s['whole_stack_idle_pss_mb']:.0f} MB)",
                "-",
                "-",
                "-",
                "-",
            )
        )
    tools = _load("mcp_tools")
    if tools is None:
        out.append(_missing("9", "MCP tools/list size", "mcp_tools"))
    else:
        out.append(
            Row(
                "9",
                f"MCP `tools/list` as sent, {tools['tools']} tools (`bench/mcp_tools.py`; "
                f"{tools['before_bytes']:,} bytes before the lean schemas)",
                f"{tools['tools_list_bytes']:,} bytes",
                "-",
                f"{tools['ratio_to_goal']:.2f} of goal",
                f"<= {tools['goal_bytes']:,} bytes",
                _met(tools["tools_list_bytes"] <= tools["goal_bytes"]),
            )
        )
        if "largest_result_bytes" in tools:
            out.append(
                Row(
                    "9",
                    "MCP largest result, every list, event-log and log tool at its largest page"
                    f" on long lists (`{tools['largest_result_tool']}`)",
                    f"{tools['largest_result_bytes']:,} bytes",
                    "-",
                    f"{tools['largest_result_bytes'] / tools['result_goal_bytes']:.2f} of goal",
                    f"<= {tools['result_goal_bytes']:,} bytes",
                    _met(tools["largest_result_bytes"] <= tools["result_goal_bytes"]),
                )
            )
    out += capacity_rows()
    out += scale_rows()
    return out


def capacity_rows() -> list[Row]:
    """Issue 25: the capacity and pending reads, 500 nodes / 5,000 pods against 10 / 100, from
    cluster-svc's watched model (its first read, which lists, apart)."""
    cap = _load("capacity")
    if cap is None:
        return [_missing("25", "capacity and pending reads at 500 nodes", "capacity")]
    small, large = cap["small"], cap["large"]
    size = f"{large['nodes']} nodes / {large['pods_counted']:,} pods"
    floor_size = f"{small['nodes']} nodes / {small['pods_counted']} pods"
    rows = []
    for read, what in (
        (
            "capacity",
            "capacity read (`GET /clusters/{name}/capacity`, a page of 100 nodes against all 10"
            " of the floor's",
        ),
        ("capacity_10", "capacity read (`GET /clusters/{name}/capacity?limit=10`"),
        ("pending", "pending read (`GET /clusters/{name}/jobs/{job}/pending`"),
    ):
        if read not in large:
            continue
        ours, floor = large[read]["p95_ms"], small[read]["p95_ms"]
        rows.append(
            Row(
                "25",
                f"{what}, cluster-svc's route on its watched model, `bench/capacity.py`), p95,"
                f" {size}",
                _ms(ours),
                f"{_ms(floor)} ({floor_size})",
                _ratio(ours, floor),
                f"<= {cap['goal_ratio']:.0f}x",
                _met(ours / floor <= cap["goal_ratio"]),
            )
        )
    if "first_read_ms" in large:
        rows.append(
            Row(
                "25",
                f"first capacity read of a cluster (starts its watch: lists every Node and Pod),"
                f" {size}",
                _ms(large["first_read_ms"]),
                f"{_ms(small['first_read_ms'])} ({floor_size})",
                _ratio(large["first_read_ms"], small["first_read_ms"]),
                "-",
                "-",
            )
        )
    return rows


def scale_rows() -> list[Row]:
    """Issue 28: a jobs list page with 10,000 jobs against 100, the node list and the cluster
    page at 1,000 nodes, and each process's memory and the AWS calls of a live fleet of 50
    clusters (`bench/scale.py`)."""
    scale = _load("scale")
    if scale is None:
        return [_missing("28", "jobs list page at 10,000 jobs; memory at 50 clusters", "scale")]
    page = scale["jobs_page"]
    ours, floor = page["10000_jobs"]["p95_ms"], page["100_jobs"]["p95_ms"]
    rows = [
        Row(
            "28",
            "jobs list page (`GET /clusters/{name}/jobs?limit=100`, keyset on an index, pages"
            " spread over the list), p95, 10,000 jobs (`bench/scale.py`)",
            _ms(ours),
            f"{_ms(floor)} (100 jobs)",
            _ratio(ours, floor),
            f"<= {page['goal_ratio']:.0f}x",
            _met(page["meets_goal"]),
        )
    ]
    nodes = scale.get("node_list")
    if nodes is None:
        rows.append(_missing("28", "node list, 1,000 recorded nodes against 10", "scale"))
    else:
        for label, what in (
            ("ui_page", "the page the UI asks for, limit 100 (100 nodes against 10)"),
            ("equal_answer", "equal answers, limit 10 both"),
        ):
            read = nodes[label]
            ours, floor = read["1000_nodes"]["p95_ms"], read["10_nodes"]["p95_ms"]
            rows.append(
                Row(
                    "28",
                    "node list (`GET /clusters/{name}/nodes?source=recorded`, keyset on an"
                    f" index), p95, 1,000 nodes, {what} (`bench/scale.py`)",
                    _ms(ours),
                    f"{_ms(floor)} (10 nodes)",
                    _ratio(ours, floor),
                    f"<= {read['goal_ratio']:.0f}x",
                    _met(read["meets_goal"]),
                )
            )
    page_ui = scale.get("cluster_page")
    if page_ui is None or "skipped" in page_ui:
        rows.append(_missing("28", "cluster page in Chromium, 1,000 nodes", "scale"))
    else:
        big, small = page_ui["1000_nodes"]["median_s"], page_ui["10_nodes"]["median_s"]
        rows.append(
            Row(
                "28",
                "cluster page in Chromium, navigation start to the first node row drawn with"
                f" its actions enabled, median of {page_ui['loads']} loads, 1,000 nodes"
                " (`bench/scale.py`)",
                f"{big:.2f} s",
                f"{small:.2f} s (10 nodes)",
                _ratio(big, small),
                f"<= {page_ui['goal_s']:.0f} s and <= {page_ui['goal_ratio']:.0f}x",
                _met(page_ui["meets_goal"]),
            )
        )
    live = scale.get("live_fleet")
    if live is None:
        rows.append(_missing("28", "memory and AWS calls of a live fleet of 50 clusters", "scale"))
        return rows
    fleet = (
        f"{live['clusters']} live clusters (one of {live['nodes']['large']:,} nodes, the others of"
        f" {live['nodes']['small']}) built through REST, watchers on"
    )
    for name, mb in live["memory"].items():
        service = name not in INFRA
        rows.append(
            Row(
                "28",
                f"RSS (PSS) {name}, {fleet}: steady idle / peak reading every list / peak of the"
                f" run ({live['growth_mb_per_cluster'].get(name, 0):+.2f} MB per small cluster from 10"
                " to 49)",
                f"{mb['steady_idle_rss_mb']:.0f} ({mb['steady_idle_pss_mb']:.0f}) /"
                f" {mb['peak_reading_rss_mb']:.0f} / {mb['peak_whole_run_rss_mb']:.0f} MB",
                "-",
                "-",
                f"<= {live['goal_mb']:.0f} MB" if service else "-",
                _met(mb["peak_whole_run_rss_mb"] <= live["goal_mb"]) if service else "-",
            )
        )
    calls = live["aws_calls"]
    hourly = calls["per_cluster_hour"]
    rows.append(
        Row(
            "28",
            f"AWS calls per idle cluster-hour, every service, {fleet}, counted over"
            f" {calls['window_seconds']:.0f} s (node watcher {hourly['node_watcher']:.0f}, drift"
            f" watcher {hourly['drift_watcher']:.0f}, the rest {hourly['rest']:.0f})",
            f"{hourly['all_services']:.0f}",
            "0 (nothing changed)",
            "-",
            f"<= {calls['goal_per_cluster_hour']:.0f}",
            # a window shorter than the drift watcher's period counts none of its observations
            "not proven: the window held no drift observation"
            if not hourly["drift_watcher"]
            else _met(calls["meets_goal"]),
        )
    )
    return rows


def k8s_rows() -> list[str]:
    k8s = _load("k8s_api")
    if k8s is None:
        return []
    get, watch = k8s["get"], k8s["watch"]
    goal = k8s.get("goal_gets_per_second", 10_000)
    line = (
        f"The Kubernetes API emulator (`bench/k8s_api.py`, issue 24): **{get['gets_per_second']:.0f}"
        f" GETs/s** of one ConfigMap over HTTPS (goal >= {goal:,}: "
        f"{_met(get['gets_per_second'] >= goal)}; {get.get('client', 'aiohttp')}, "
        f"{get['connections']} connections, p50 {get['latency_ms_p50']} ms, p99 "
        f"{get['latency_ms_p99']} ms)"
    )
    if floor := k8s.get("floor"):
        line += (
            f"; floor: the same HTTP/TLS layer answering the same bytes, "
            f"{floor['gets_per_second']:.0f} GETs/s ({k8s['ratio_to_floor']:.2f} of it)"
        )
    if python := k8s.get("get_python_client"):
        line += f"; driven by aiohttp instead, {python['gets_per_second']:.0f} GETs/s"
    if note := k8s.get("note"):
        line += f" ({note})"
    line += (
        f". {watch['watches']} watches got {watch['events_delivered']}/"
        f"{watch['events_expected']} events in {watch['fanout_seconds']} s."
    )
    return ["", line]


# Sections after this line are written by hand (measured outside `make bench`) and kept.
KEPT = "<!-- the sections below are measured outside make bench and kept when it rewrites this file -->"


def _kept() -> str:
    text = DOC.read_text() if DOC.exists() else ""
    return text[text.index(KEPT) :] if KEPT in text else ""


def write(extra: str = "") -> Path:
    run = _load("run") or {}
    elapsed_seconds = run.get("elapsed_seconds")
    lines = [
        "# Performance",
        "",
        "Written by `make bench` (`python -m bench`) from `bench/results/*.json`; each figure is",
        "measured in the same run as its floor, on the same machine, so read the ratios: the",
        "machine is shared (2 cores) and absolute figures move with its load.",
        "",
        "| # | what | ours | floor | ratio | goal | |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows():
        lines.append(
            f"| {r.item} | {r.what} | {r.ours} | {r.floor} | {r.ratio} | {r.goal} | {r.met} |"
        )
    lines += k8s_rows()
    recorded = sorted(
        {
            (data.get("recorded_at") or "?")
            for name in ("accept", "pipeline", "fanout", "status_lag", "workflow", "memory")
            if (data := _load(name)) is not None
        }
    )
    machine = (_load("pipeline") or _load("accept") or {}).get("machine", {})
    lines += [
        "",
        f"Recorded {recorded[0] if recorded else '?'} to {recorded[-1] if recorded else '?'} on "
        f"{machine.get('cpus', '?')} cores, Python {machine.get('python', '?')}"
        + (f"; `make bench` took {elapsed_seconds:.0f} s." if elapsed_seconds else "."),
    ]
    if run.get("failed"):
        lines.append(f"Failed in that run: {', '.join(run['failed'])}.")
    lines += ["", METHOD.rstrip(), "", PROFILED.rstrip()]
    if extra:
        lines += ["", extra.rstrip()]
    if kept := _kept():
        lines += ["", kept.rstrip()]
    DOC.write_text("\n".join(lines) + "\n")
    return DOC


if __name__ == "__main__":
    print(write())
