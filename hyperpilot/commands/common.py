"""What every command area shares: the client from the profile, options, errors, waiting."""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, ParamSpec, TypeVar, get_args, get_origin

import typer
from pydantic import BaseModel, ValidationError
from typer.models import OptionInfo

from hyperpilot import config as configuration
from hyperpilot.client import EXIT_INTERRUPTED, EXIT_USAGE, Client, CliError, InvalidRequest
from hyperpilot.commands.complete import cluster_names
from hyperpilot.output import Format, cell, console, default_format, emit, err_console, to_yaml
from hyperpilot.progress import Follower, duration, exit_code

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class Globals:
    profile: str | None = None
    url: str | None = None


GLOBALS = Globals()


def client() -> Client:
    """A client for the gateway the profile, the environment or `--url` names."""
    try:
        resolved = configuration.resolve(profile=GLOBALS.profile, url=GLOBALS.url)
    except configuration.ConfigError as exc:
        raise CliError(str(exc)) from exc
    return Client(resolved.url, resolved.token)


def report(error: CliError) -> None:
    for line in error.lines():
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn a CliError into its message on stderr and its exit code (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except configuration.ConfigError as exc:
            report(CliError(str(exc)))
            raise typer.Exit(EXIT_USAGE) from None
        except CliError as exc:
            report(exc)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def examples(*lines: str) -> str:
    """A command's help epilog: its examples, one per line."""
    return "[bold]Examples[/bold]\n\n" + "\n\n".join(f"  $ {line}" for line in lines)


class Area(typer.Typer):
    """A command group whose commands report API errors as messages with exit codes."""

    def __init__(self, name: str, help: str) -> None:
        super().__init__(name=name, help=help, no_args_is_help=True)
        self.area_name = name

    def command(  # type: ignore[override]
        self, name: str | None = None, *, epilog: str | None = None, **kwargs: Any
    ) -> Callable[[Callable[P, R]], Callable[P, R]]:
        register = super().command(name, epilog=epilog, **kwargs)

        def decorator(fn: Callable[P, R]) -> Callable[P, R]:
            register(handle_errors(fn))
            return fn

        return decorator


def _format_callback(value: Format | None) -> Format:
    return value or default_format()


Output = Annotated[
    Format | None,
    typer.Option(
        "--output",
        "-o",
        help="table, json or yaml (default: $HYPERPILOT_OUTPUT or table)",
        callback=_format_callback,
        show_default=False,
    ),
]
Wait = Annotated[
    bool,
    typer.Option(
        "--wait",
        "-w",
        help="Follow the operation's progress until it ends; the exit code says how it ended",
    ),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation")]
DryRun = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the plan computed from actual state; change nothing"),
]
Cluster = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        "-c",
        help="Cluster name (the active cluster if omitted)",
        autocompletion=cluster_names,
        show_default=False,
    ),
]
Limit = Annotated[
    int | None,
    typer.Option(
        "--limit",
        min=1,
        help="At most this many rows (default: every row, read a page at a time)",
        show_default=False,
    ),
]
PageToken = Annotated[
    str | None,
    typer.Option(
        "--page-token",
        help="Start after the rows already read: the token a --limit list printed",
        show_default=False,
    ),
]
# The most rows the gateway sends in one page of a list paged by cursor.
PAGE = 1000


def listed(
    api: Client, path: str, limit: int | None, page_token: str | None, **params: Any
) -> list[Any]:
    """The rows of a REST list paged by cursor (X-Next-Page-Token): every page, or the first
    `limit` rows; when rows are left, how to read them goes to stderr."""
    rows, _ = _pages(api, path, limit, page_token, None, params)
    return rows


def listed_in(
    api: Client, path: str, field: str, limit: int | None, page_token: str | None, **params: Any
) -> dict[str, Any]:
    """A REST object whose `field` is a list paged by cursor (the teams of GET .../teams):
    the first page's object, its `field` holding the rows of every page read (as `listed`)."""
    rows, first = _pages(api, path, limit, page_token, field, params)
    return {**first, field: rows}


def _pages(
    api: Client,
    path: str,
    limit: int | None,
    page_token: str | None,
    field: str | None,
    params: dict[str, Any],
) -> tuple[list[Any], Any]:
    rows: list[Any] = []
    first: Any = None
    token = page_token
    while True:
        want = PAGE if limit is None else min(PAGE, limit - len(rows))
        response = api.send("GET", path, params={**params, "limit": want, "page_token": token})
        body = response.json()
        first = body if first is None else first
        rows += body if field is None else body.get(field) or []
        token = response.headers.get("x-next-page-token")
        if token is None:
            return rows, first
        if limit is not None and len(rows) >= limit:
            left = int(response.headers.get("x-total-count", len(rows))) - len(rows)
            err_console().print(
                f"{len(rows)} shown, more follow (about {left}): --page-token {token}",
                highlight=False,
            )
            return rows, first


Region = Annotated[
    str | None,
    typer.Option(
        help="A region the control plane serves (hyperpilot inspect regions); the default if"
        " omitted"
    ),
]


class ContractOption(OptionInfo):
    """An option that sets one field of a REST body: its help is the contract's description
    (plus notes) and its bounds the contract's (`ge`, `le`), so the two cannot drift; a test
    compares each with the OpenAPI document."""

    def __init__(
        self,
        model: type[BaseModel],
        field: str,
        *param_decls: str,
        notes: str = "",
        show_default: bool = True,
    ) -> None:
        info = model.model_fields[field]
        text = info.description or field.replace("_", " ")
        bounds = {
            key: getattr(m, attr)
            for m in info.metadata
            for key, attr in (("min", "ge"), ("max", "le"))
            if hasattr(m, attr)
        }
        choices = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
        if choices and all(isinstance(c, int) for c in choices):
            bounds = {"min": min(choices), "max": max(choices)}
        super().__init__(
            default=...,  # in `Annotated`, the default is the parameter's own
            param_decls=param_decls,
            help=f"{text} ({notes})" if notes else text,
            show_default=show_default,
            **bounds,
        )
        self.model = model
        self.field = field


def checked(model: type[BaseModel], body: dict[str, Any]) -> dict[str, Any]:
    """The body, checked by the contract model the gateway checks it with: a value it would
    refuse is refused here, naming the field, before anything is sent."""
    try:
        model.model_validate(body)
    except ValidationError as exc:
        raise InvalidRequest.of(exc) from None
    return body


def fmt(value: Format | None) -> Format:
    return value or default_format()


def confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise CliError(f"{question} Refusing without a terminal; pass --yes to confirm")
    if not typer.confirm(question, default=False, err=True):
        sys.stderr.write("not confirmed; nothing was sent\n")
        raise typer.Exit(EXIT_USAGE)


SHOW_CURSOR = b"\x1b[?25h"


class _ExitOnInterrupt:
    """While inside: Ctrl-C (SIGINT) writes `message` to stderr and ends the process at once,
    with EXIT_INTERRUPTED. Nothing is left to clean up when one stops watching, and unwinding
    a KeyboardInterrupt through the HTTP client's connection pool, raised between a lock's
    acquire and its release, can leave the pool's lock held and the exit waiting on it for
    ever. The message goes straight to the file descriptor: the handler may run while the main
    thread holds sys.stderr's own lock."""

    def __init__(self, message: str) -> None:
        self.message = message.encode()
        self.previous: Any = None

    def _handler(self, signum: int, frame: object) -> None:
        if os.isatty(2):
            os.write(2, SHOW_CURSOR)  # the live progress table hides it while it draws
        os.write(2, self.message)
        os._exit(EXIT_INTERRUPTED)

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handler)

    def __exit__(self, *_: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def wait_for(api: Client, operation_id: str, output: Format) -> None:
    """Show live progress until the operation ends; print it; exit with its outcome.

    Ctrl-C stops watching only: the operation keeps running, and the command to resume
    watching it is printed.
    """
    err = err_console()
    follower = Follower(api, operation_id, err)
    stopped = (
        f"\nstopped watching; operation {operation_id} keeps running.\n"
        f"resume with: hyperpilot operations wait {operation_id}\n"
    )
    with _ExitOnInterrupt(stopped):
        try:
            final = follower.run()
        except KeyboardInterrupt:  # off the main thread, where no signal handler can be set
            sys.stderr.write(stopped)
            sys.stderr.flush()
            raise typer.Exit(EXIT_INTERRUPTED) from None
    status = str(final["status"])
    if output is Format.TABLE:
        out = console()
        took = duration(follower.view.elapsed() if follower.view else None)
        out.print(f"operation {operation_id} {status} in {took}")
        if final.get("error"):
            error = final["error"]
            kind, message = str(error.get("code") or ""), str(error.get("message") or "")
            out.print(f"  error: {message if kind in message else f'{kind}: {message}'}")
            if error.get("hint"):
                out.print(f"  hint: {error['hint']}")
            out.print(f"  retry the failed stages: hyperpilot operations retry {operation_id}")
        out.print(f"  details: hyperpilot operations show {operation_id} -o yaml")
    else:
        emit(final, output)
    code = exit_code(status)
    if code:
        raise typer.Exit(code)


def accepted(api: Client, answer: dict[str, Any], output: Format, wait: bool) -> None:
    """After a 202: follow the operation (--wait), or say how to follow it."""
    operation_id = str(answer["operation_id"])
    if output is Format.TABLE:
        out = console()
        if not wait:
            note = "" if answer.get("created", True) else " (the same request was already accepted)"
            out.print(f"accepted: operation {operation_id}{note}")
        if answer.get("noop"):
            out.print("  nothing to change: the actual state already matches")
        for line in diff_lines(answer.get("diff")):
            out.print(f"  change {line}")
        if not wait:
            out.print(f"  follow it: hyperpilot operations wait {operation_id}")
    elif not wait:
        emit(answer, output)
    if wait:
        wait_for(api, operation_id, output)


def diff_lines(diff: Any) -> list[str]:
    """'field: actual -> requested' for each change the gateway computed."""
    if not isinstance(diff, dict):
        return []
    lines = []
    for field, change in diff.items():
        if isinstance(change, dict) and ("actual" in change or "requested" in change):
            lines.append(
                f"{field}: {cell(change.get('actual'))} -> {cell(change.get('requested'))}"
            )
        else:
            lines.append(f"{field}: {cell(change)}")
    return lines


def mutate(
    api: Client,
    method: str,
    path: str,
    body: Any = None,
    *,
    output: Format,
    wait: bool,
    dry_run: bool = False,
    params: dict[str, Any] | None = None,
) -> None:
    """Send a mutation; with --dry-run print the plan the gateway answers (nothing changes)."""
    params = {**(params or {}), **({"dry_run": "true"} if dry_run else {})}
    answer = api.request(method, path, params=params, json=body)
    if dry_run:
        plan = answer.get("plan", answer) if isinstance(answer, dict) else answer
        if output is Format.TABLE:
            out = console()
            out.print("dry run: nothing was changed; the plan from actual state:")
            sys.stdout.write(to_yaml(plan))
            sys.stdout.flush()
        else:
            emit(answer, output)
        return
    accepted(api, answer, output, wait)


def active_cluster(api: Client, cluster: str | None) -> str:
    """The --cluster given, or the active cluster."""
    if cluster:
        return cluster
    return str(api.get("/api/v1/clusters/active")["name"])
