"""Live progress of an operation, from its event stream.

`follow()` reads the operation (its stages and the events so far), then follows
`GET /api/v1/events/stream?operation_id=...&after=<last seq>` until the operation is terminal.
A dropped stream is resumed from the last sequence number seen, so nothing is shown twice or
missed; after repeated failures (or a gateway without the stream) it long-polls
`GET /api/v1/operations/{id}?wait=` instead. On a terminal a rich Live table shows each stage
with its state, elapsed time and latest message; elsewhere (a pipe, CI) each change is a line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from hyperpilot.client import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SERVER,
    ApiError,
    Client,
    ConnectionFailed,
    parse_sse,
)
from hyperpilot.output import STATUS_STYLES
from shared.boundary import api_path

TERMINAL = frozenset({"succeeded", "failed", "cancelled", "noop"})
TERMINAL_EVENTS = {
    "OperationSucceeded": "succeeded",
    "OperationFailed": "failed",
    "OperationNoop": "noop",
    "OperationCancelled": "cancelled",
}
# Events after which the operation's stages are read again (new attempt, new stages).
RELOAD_EVENTS = frozenset({"OperationStarted", "OperationRetried", "CancelRequested"})


def exit_code(status: str) -> int:
    """How a terminal status maps to the process exit code."""
    if status in ("succeeded", "noop"):
        return EXIT_OK
    if status == "failed":
        return EXIT_FAILED
    if status == "cancelled":
        return EXIT_CANCELLED
    return EXIT_SERVER


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _error_text(error: Any) -> str:
    """The error's message (its hint is printed once, under the table, by the command)."""
    if not isinstance(error, dict):
        return str(error or "")
    return str(error.get("message") or error.get("code") or "")


@dataclass
class StageView:
    name: str
    title: str = ""
    status: str = "pending"
    started: datetime | None = None
    finished: datetime | None = None
    message: str = ""
    attempts: int = 0

    def elapsed(self, now: datetime) -> float | None:
        if self.started is None:
            return None
        end = self.finished or now
        return (end - self.started).total_seconds()


class OperationView:
    """What is known about one operation: its status and each stage's state and latest news."""

    def __init__(self, op: dict[str, Any]) -> None:
        self.id = str(op["id"])
        self.kind = str(op.get("kind", ""))
        self.target = f"{op.get('target_type', '')} {op.get('target_id', '')}".strip()
        self.status = "pending"
        self.created: datetime | None = None
        self.finished: datetime | None = None
        self.error: Any = None
        self.stages: dict[str, StageView] = {}
        self.load(op)

    def load(self, op: dict[str, Any]) -> None:
        """Take the server's view of the operation (stages in position order)."""
        self.status = str(op.get("status", self.status))
        self.created = parse_time(op.get("created_at")) or self.created
        self.finished = parse_time(op.get("finished_at"))
        self.error = op.get("error")
        for stage in op.get("stages") or []:
            view = self.stages.get(stage["name"]) or StageView(stage["name"])
            self.stages[stage["name"]] = view
            view.title = stage.get("title") or view.title
            view.status = stage.get("status") or view.status
            view.attempts = int(stage.get("attempts") or view.attempts)
            # The server keeps a stage's first start; an event seen here dates this attempt.
            view.started = view.started or parse_time(stage.get("started_at"))
            done = view.status not in ("pending", "running")
            view.finished = parse_time(stage.get("finished_at")) if done else None
            if stage.get("error") and view.status == "failed":
                view.message = _error_text(stage["error"])
            elif stage.get("progress"):
                view.message = str(stage["progress"])
            elif stage.get("external_id") and not view.message:
                view.message = f"submitted {stage['external_id']}"

    def stage(self, name: str) -> StageView:
        if name not in self.stages:
            self.stages[name] = StageView(name)
        return self.stages[name]

    def apply(self, event: dict[str, Any]) -> str | None:
        """Apply one event; return a line that says what changed (None when nothing visible)."""
        kind = str(event.get("type", ""))
        payload = event.get("payload") or {}
        at = parse_time(event.get("occurred_at"))
        name = payload.get("stage")
        if kind == "OperationAccepted":
            self.status = "pending"
            return "accepted"
        if kind in ("OperationStarted", "OperationRetried"):
            self.status = "running"
            if kind == "OperationRetried":
                return f"retrying stages {', '.join(payload.get('stages', []))}"
            return f"started (attempt {payload.get('attempt', 1)})"
        if kind in TERMINAL_EVENTS:
            self.status = TERMINAL_EVENTS[kind]
            self.finished = at
            if kind == "OperationFailed":
                self.error = payload.get("error")
                return f"failed: {_error_text(payload.get('error'))}"
            if kind == "OperationNoop":
                return f"nothing to do: {payload.get('reason', '')}"
            return self.status
        if name is None:
            details = ", ".join(f"{k}={v}" for k, v in payload.items() if not isinstance(v, dict))
            return f"{kind} {details}".strip()
        stage = self.stage(str(name))
        if kind == "StageStarted":
            stage.status, stage.started, stage.finished = "running", at, None
            stage.title = payload.get("title") or stage.title
            stage.attempts = int(payload.get("attempt") or stage.attempts + 1)
            stage.message = ""
            return "running"
        if kind == "StageSubmitted":
            stage.message = f"submitted {payload.get('external_id', '')}"
        elif kind == "StageProgress":
            stage.message = str(payload.get("message", ""))
        elif kind == "StageRetrying":
            stage.message = (
                f"retrying in {float(payload.get('delay_seconds', 0)):.1f}s: "
                f"{_error_text(payload.get('error'))}"
            )
        elif kind == "StageSucceeded":
            stage.status = "noop" if payload.get("noop") else "succeeded"
            stage.finished = at
            if payload.get("noop"):
                stage.message = "nothing to do"
            return stage.status
        elif kind == "StageFailed":
            stage.status, stage.finished = "failed", at
            stage.message = _error_text(payload.get("error"))
            return f"failed: {stage.message}"
        else:
            return kind
        return stage.message

    def elapsed(self, now: datetime | None = None) -> float | None:
        if self.created is None:
            return None
        end = self.finished or now or datetime.now(UTC)
        return (end - self.created).total_seconds()

    @staticmethod
    def _message(stage: StageView) -> Text:
        """A running or failed stage shows its latest news; a finished one what it did."""
        if stage.status == "succeeded":
            return Text(stage.title or stage.message, style="dim")
        if stage.status == "noop":
            return Text("nothing to do", style="dim")
        if stage.status == "failed":
            return Text(stage.message or stage.title, style="red")
        return Text(stage.message) if stage.message else Text(stage.title, style="dim")

    def render(self) -> RenderableType:
        now = datetime.now(UTC)
        header = Text.assemble(
            ("operation ", "dim"),
            (self.id, "bold"),
            f"  {self.kind}  {self.target}  ",
            (self.status, STATUS_STYLES.get(self.status, "")),
            f"  {duration(self.elapsed(now))}",
        )
        grid = Table(box=None, pad_edge=False, header_style="bold")
        grid.add_column("STAGE", no_wrap=True)
        grid.add_column("STATE", no_wrap=True)
        grid.add_column("ELAPSED", justify="right", no_wrap=True)
        grid.add_column("MESSAGE", overflow="fold")
        for stage in list(self.stages.values()):
            state: RenderableType
            if stage.status == "running":
                state = Spinner("dots", text=Text("running", style="cyan"), style="cyan")
            else:
                state = Text(stage.status, style=STATUS_STYLES.get(stage.status, "dim"))
            message = self._message(stage)
            grid.add_row(stage.name, state, duration(stage.elapsed(now)), message)
        return Group(header, grid)


class Follower:
    """Follows one operation to a terminal status, showing its progress on `console`."""

    def __init__(
        self,
        client: Client,
        operation_id: str,
        console: Console,
        *,
        live: bool | None = None,
        max_stream_failures: int = 3,
        poll_wait: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.operation_id = operation_id
        self.path = api_path("operations", operation_id)
        self.console = console
        self.live = console.is_terminal if live is None else live
        self.max_stream_failures = max_stream_failures
        self.poll_wait = poll_wait
        self.sleep = sleep
        self.last_seq = 0
        self.polling = False
        self.view: OperationView | None = None

    def run(self) -> dict[str, Any]:
        """Block until the operation is terminal; return its final state (stages, events)."""
        op = self.client.get(self.path)
        self.view = OperationView(op)
        if not self.live:
            self._line(f"operation {self.view.id}  {self.view.kind}  {self.view.target}")
        for event in op.get("events") or []:
            self._handle(event, replay=True)
        self.view.load(op)
        if not self.live:
            self._loop()
            last: dict[str, Any] = self.client.get(self.path)
            self.view.load(last)
            return last
        with Live(
            get_renderable=self.view.render,
            console=self.console,
            refresh_per_second=8,
            transient=False,
        ) as live:
            self._loop()
            final: dict[str, Any] = self.client.get(self.path)
            self.view.load(final)
            live.refresh()
        return final

    def _line(self, text: str) -> None:
        self.console.print(Text(text), soft_wrap=True)

    def _handle(self, event: dict[str, Any], *, replay: bool = False) -> None:
        assert self.view is not None
        seq = int(event.get("seq", 0))
        if seq and seq <= self.last_seq:
            return
        self.last_seq = max(self.last_seq, seq)
        line = self.view.apply(event)
        kind = str(event.get("type", ""))
        reload = kind in RELOAD_EVENTS or (
            kind.startswith("Operation")
            and kind not in TERMINAL_EVENTS
            and kind != "OperationAccepted"
        )
        if reload and not replay:
            self.view.load(self.client.get(self.path, events="false"))
        if line is not None and not self.live:
            at = parse_time(event.get("occurred_at"))
            since = (at - self.view.created).total_seconds() if at and self.view.created else None
            stage = (event.get("payload") or {}).get("stage") or "-"
            self._line(f"{duration(since):>8}  {stage:<22} {line}")

    def _note(self, text: str) -> None:
        self.console.print(Text(text, style="yellow"), soft_wrap=True)

    def _loop(self) -> None:
        assert self.view is not None
        failures = 0
        while self.view.status not in TERMINAL:
            if self.polling:
                op = self.client.request(
                    "GET", self.path, params={"wait": self.poll_wait}, timeout=self.poll_wait + 30
                )
                for event in op.get("events") or []:
                    self._handle(event)
                self.view.load(op)
                continue
            try:
                received = self._stream_once()
                failures = 0 if received else failures + 1
            except (httpx.TransportError, ConnectionFailed) as exc:
                failures += 1
                self._note(
                    f"event stream dropped ({type(exc).__name__}); resuming after seq {self.last_seq}"
                )
            except ApiError as exc:
                if exc.status in (404, 405, 406) or exc.status >= 500:
                    self._note(f"event stream unavailable ({exc.status}); polling instead")
                    self.polling = True
                    continue
                raise
            if failures >= self.max_stream_failures:
                self._note("the event stream keeps failing; polling the operation instead")
                self.polling = True
            elif failures:
                self.sleep(min(0.5 * 2**failures, 5.0))
                # The operation may have ended while the stream was down.
                op = self.client.get(self.path, events="false")
                if op["status"] in TERMINAL:
                    self.view.load(op)

    def _stream_once(self) -> bool:
        """Read the stream until the operation is terminal or the server ends it."""
        assert self.view is not None
        received = False
        params = {"operation_id": self.operation_id, "after": self.last_seq}
        with self.client.stream("/api/v1/events/stream", params) as response:
            for _, _, data in parse_sse(response.iter_lines()):
                try:
                    event = json.loads(data)
                except ValueError:
                    continue
                received = True
                self._handle(event)
                if self.view.status in TERMINAL:
                    break
        return received
