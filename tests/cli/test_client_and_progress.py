"""The REST client's headers and safe retries; progress that survives a dropped stream."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from rich.console import Console

from hyperpilot.client import ApiError, Client, ConnectionFailed, parse_sse
from hyperpilot.progress import Follower, OperationView, duration

OP = "11111111-2222-3333-4444-555555555555"


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hyperpilot.client.time.sleep", lambda _: None)


def _client(handler: Any) -> Client:
    return Client("http://gw", "hp_token", transport=httpx.MockTransport(handler))


def test_every_request_says_it_comes_from_the_cli_and_mutations_carry_a_key() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json={"operation_id": OP})

    with _client(handler) as api:
        api.get("/api/v1/storage/buckets", region=None, limit=5)
        api.post("/api/v1/storage/buckets", {"name": "b1"})
        api.post("/api/v1/storage/buckets", {"name": "b1"})
    get, first, second = seen
    assert all(r.headers["X-Hyperpilot-Source"] == "cli" for r in seen)
    assert all(r.headers["Authorization"] == "Bearer hp_token" for r in seen)
    assert "Idempotency-Key" not in get.headers
    assert dict(get.url.params) == {"limit": "5"}
    assert first.headers["Idempotency-Key"] != second.headers["Idempotency-Key"]
    assert json.loads(first.content) == {"name": "b1"}


def test_a_retried_mutation_reuses_its_idempotency_key() -> None:
    keys: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["Idempotency-Key"])
        if len(keys) == 1:
            raise httpx.ConnectError("connection reset", request=request)
        if len(keys) == 2:
            return httpx.Response(503, headers={"Retry-After": "0"}, json={"error": {}})
        return httpx.Response(202, json={"operation_id": OP, "created": False})

    with _client(handler) as api:
        answer = api.post("/api/v1/storage/buckets", {"name": "b1"})
    assert answer["operation_id"] == OP
    assert len(keys) == 3 and len(set(keys)) == 1


def test_an_unreachable_gateway_is_a_connection_error_after_the_retries() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("refused", request=request)

    with _client(handler) as api, pytest.raises(ConnectionFailed) as caught:
        api.get("/api/v1/operations")
    assert calls == 3 and caught.value.exit_code == 4


def test_an_error_status_raises_the_rest_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            422,
            json={
                "error": {
                    "code": "validation_error",
                    "message": "x",
                    "fields": [{"field": "name", "rule": "missing", "message": "m", "hint": "h"}],
                }
            },
        )

    with _client(handler) as api, pytest.raises(ApiError) as caught:
        api.post("/api/v1/storage/buckets", {})
    assert caught.value.fields[0]["field"] == "name" and caught.value.exit_code == 2


def test_server_sent_events_are_parsed_and_comments_skipped() -> None:
    lines = ["retry: 1000", "", ": keep-alive", "", "id: 7", "event: StageStarted", "data: {}", ""]
    lines += ["data: a", "data: b", ""]
    assert list(parse_sse(iter(lines))) == [("7", "StageStarted", "{}"), (None, "message", "a\nb")]


def _event(seq: int, type_: str, **payload: Any) -> dict[str, Any]:
    return {
        "seq": seq,
        "event_id": f"e{seq}",
        "operation_id": OP,
        "type": type_,
        "subject": "evt.x",
        "principal": "admin",
        "occurred_at": f"2026-11-29T10:00:{seq:02d}+00:00",
        "payload": payload,
    }


EVENTS = [
    _event(1, "OperationAccepted", kind="storage.create"),
    _event(2, "OperationStarted", kind="storage.create", attempt=1),
    _event(3, "StageStarted", stage="bucket", title="Create the S3 bucket", attempt=1),
    _event(4, "StageProgress", stage="bucket", message="CreateBucket sent"),
    _event(5, "StageSucceeded", stage="bucket"),
    _event(6, "StageStarted", stage="encryption", title="Turn on encryption", attempt=1),
    _event(7, "StageRetrying", stage="encryption", error={"message": "throttled"}, delay_seconds=1),
    _event(8, "StageSucceeded", stage="encryption", noop=True),
    _event(9, "OperationSucceeded", kind="storage.create"),
]


def _op(status: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    done = status == "succeeded"
    return {
        "id": OP,
        "kind": "storage.create",
        "target_type": "bucket",
        "target_id": "b1",
        "status": status,
        "created_at": "2026-11-29T10:00:00+00:00",
        "finished_at": "2026-11-29T10:00:09+00:00" if done else None,
        "error": None,
        "result": {"ok": True} if done else None,
        "stages": [
            {
                "name": "bucket",
                "title": "Create the S3 bucket",
                "status": "succeeded" if done else "pending",
            },
            {
                "name": "encryption",
                "title": "Turn on encryption",
                "status": "noop" if done else "pending",
            },
        ],
        "events": events,
    }


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        f"id: {e['seq']}\nevent: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
    )


class _Dropping(httpx.SyncByteStream):
    """A stream that delivers some events and then loses the connection."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def __iter__(self) -> Iterator[bytes]:
        yield b"retry: 1000\n\n"
        yield self.body
        raise httpx.ReadError("connection lost")


def test_a_dropped_stream_resumes_after_the_last_sequence_number() -> None:
    stream_calls: list[dict[str, str]] = []
    finished = False

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal finished
        if request.url.path == "/api/v1/events/stream":
            params = dict(request.url.params)
            stream_calls.append({**params, "last": request.headers.get("Last-Event-ID", "")})
            after = int(params["after"])
            if len(stream_calls) == 1:
                return httpx.Response(200, stream=_Dropping(_sse(EVENTS[after:5])))
            finished = True
            return httpx.Response(200, content=_sse(EVENTS[after:]))
        if finished:
            return httpx.Response(200, json=_op("succeeded", EVENTS))
        return httpx.Response(200, json=_op("running", EVENTS[:2]))

    out = io.StringIO()
    with _client(handler) as api:
        follower = Follower(api, OP, Console(file=out, width=120), live=False, sleep=lambda _: None)
        final = follower.run()
    assert final["status"] == "succeeded"
    assert [c["after"] for c in stream_calls] == ["2", "5"]
    assert stream_calls[1]["last"] == "5" and stream_calls[1]["operation_id"] == OP
    text = out.getvalue()
    assert "event stream dropped" in text and "resuming after seq 5" in text
    assert text.count("CreateBucket sent") == 1  # nothing shown twice
    assert "retrying in 1.0s: throttled" in text
    assert text.rstrip().endswith("succeeded")
    assert follower.view is not None and follower.view.elapsed() == 9.0


def test_without_the_stream_it_falls_back_to_polling() -> None:
    polls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/events/stream":
            return httpx.Response(404, json={"error": {"code": "not_found", "message": "no"}})
        if "wait" in request.url.params:
            polls.append(request.url.params["wait"])
        if polls:
            return httpx.Response(200, json=_op("succeeded", EVENTS))
        return httpx.Response(200, json=_op("running", EVENTS[:2]))

    out = io.StringIO()
    with _client(handler) as api:
        final = Follower(api, OP, Console(file=out, width=120), live=False).run()
    assert final["status"] == "succeeded" and polls == ["10.0"]
    assert "polling instead" in out.getvalue()
    assert "encryption" in out.getvalue()


def test_the_live_view_shows_each_stage_state_elapsed_and_message() -> None:
    view = OperationView(_op("running", []))
    for event in EVENTS[:7]:
        view.apply(event)
    console = Console(file=io.StringIO(), width=120, record=True)
    console.print(view.render())
    text = console.export_text()
    assert "bucket" in text and "succeeded" in text and "2.0s" in text
    assert "encryption" in text and "running" in text
    assert "retrying in 1.0s: throttled" in text
    view.apply(EVENTS[7])
    view.apply(EVENTS[8])
    assert view.status == "succeeded" and view.stages["encryption"].status == "noop"


def test_durations_read_well() -> None:
    assert duration(None) == "-"
    assert duration(4.25) == "4.2s"
    assert duration(65) == "1m05s"
    assert duration(3725) == "1h02m"
