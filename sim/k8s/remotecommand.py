"""`pods/exec` over WebSockets, as the kubelet serves it to `kubectl exec` and the official
clients (k8s.io/apimachinery/pkg/util/remotecommand, the `v5.channel.k8s.io` and
`v4.channel.k8s.io` subprotocols: https://kubernetes.io/docs/reference/using-api/websockets/).

Every message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 the error channel (a
`Status` when the command ends: Success, or Failure with reason NonZeroExitCode and the exit code
as its cause, which `kubectl exec` exits with), 4 terminal resize; in v5, 255 closes a channel
(the client's stdin end). Commands run in `container_shell`; a shell with stdin attached reads
lines as they come (with a terminal, the input is echoed and each line answered with a prompt).
A resize message is the JSON of client-go's `remotecommand.TerminalSize` (`{"Width": columns,
"Height": rows}`, k8s.io/client-go/tools/remotecommand/resize.go), which the kubelet decodes
and applies to the container's terminal (k8s.io/kubelet/pkg/cri/streaming/remotecommand
httpstream.go, handleResizeEvents); here `stty size` in the session reads it back.

SPDY/3.1, the older streaming protocol, is not served: kubectl tries WebSockets first and uses
them when the upgrade succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import orjson

from sim.k8s import websocket
from sim.k8s.container_shell import Container, NotFound, Result, Shell
from sim.k8s.errors import ApiError
from sim.k8s.http import Request, UpgradeResponse

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash")


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


def _status(command: list[str], result: Result | None, problem: str | None) -> bytes:
    if problem is not None:
        return orjson.dumps(
            {
                "metadata": {},
                "status": "Failure",
                "message": f"Internal error occurred: error executing command in container: {problem}",
                "reason": "InternalError",
                "code": 500,
            }
        )
    assert result is not None
    if result.code == 0:
        return orjson.dumps({"metadata": {}, "status": "Success"})
    # k8s.io/kubelet/pkg/cri/streaming/remotecommand/websocket.go: the exit code as a cause
    return orjson.dumps(
        {
            "metadata": {},
            "status": "Failure",
            "message": (
                "command terminated with non-zero exit code: error executing command "
                f"[{' '.join(command)}], exit code {result.code}"
            ),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(result.code)}]},
        }
    )


def _container(server: ApiServer, req: Request, namespace: str, name: str) -> Container:
    pods = server.api.registry.lookup("", "v1", "pods")
    assert pods is not None
    pod = server.api.get_raw(pods, namespace, name)
    specs = {c["name"]: c for c in pod["spec"].get("containers") or []}
    chosen = req.query.get("container")
    if not chosen:
        if len(specs) != 1:
            raise ApiError(
                400,
                f"a container name must be specified for pod {name}, choose one of: "
                f"[{' '.join(specs)}]",
            )
        chosen = next(iter(specs))
    if chosen not in specs:
        raise ApiError(400, f"container {chosen} is not valid for pod {name}")
    node_name = pod["spec"].get("nodeName")
    if not node_name:
        raise ApiError(400, f"pod {name} does not have a host assigned")
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    state = next((s.get("state") or {} for s in statuses if s.get("name") == chosen), {})
    if "running" not in state:
        raise ApiError(400, f'unable to upgrade connection: container not found ("{chosen}")')
    return Container(
        store=server.store,
        files=server.files,
        cluster=server.cluster,
        pod=pod,
        spec=specs[chosen],
        node=server.store.get("nodes", "", node_name),
    )


def exec_upgrade(server: ApiServer, req: Request, namespace: str, name: str) -> UpgradeResponse:
    """Check the request as the API server and kubelet do, then switch to the stream."""
    command = [v for k, v in req.query_items if k == "command"]
    container = _container(server, req, namespace, name)
    if not command:
        raise ApiError(400, "you must specify at least one command for the container")
    if not websocket.is_upgrade(req.headers):
        raise ApiError(
            400,
            "unable to upgrade connection: the API server streams exec over WebSockets "
            f"({', '.join(PROTOCOLS)}); SPDY/3.1 is not served",
        )
    headers, protocol = websocket.negotiate(req.headers, PROTOCOLS)
    stdin = _truthy(req.query.get("stdin"))
    tty = _truthy(req.query.get("tty"))
    shell = Shell(container)

    async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ws = websocket.WebSocket(reader, writer)
        try:
            await _session(ws, protocol, shell, command, stdin=stdin, tty=tty)
        except websocket.Closed:
            pass
        finally:
            await ws.close()

    return UpgradeResponse(headers, run)


async def _session(
    ws: websocket.WebSocket,
    protocol: str,
    shell: Shell,
    command: list[str],
    *,
    stdin: bool,
    tty: bool,
) -> None:
    async def send(channel: int, data: bytes) -> None:
        if data:
            await ws.send(bytes([channel]) + data)

    out_channel = STDOUT
    if stdin and command[0] in SHELLS and "-c" not in command:
        result = await _interactive(ws, protocol, shell, send, tty=tty)
        await ws.send(bytes([ERROR]) + _status(command, result, None))
        return
    try:
        result = shell.run(command)
    except NotFound as exc:
        problem = (
            "failed to exec in container: OCI runtime exec failed: exec failed: unable to start "
            f'container process: exec: "{exc}": executable file not found in $PATH: unknown'
        )
        await ws.send(bytes([ERROR]) + _status(command, None, problem))
        return
    if result.sleep:
        await asyncio.sleep(result.sleep)
    stdout = result.stdout.replace(b"\n", b"\r\n") if tty else result.stdout
    await send(out_channel, stdout)
    await send(STDOUT if tty else STDERR, result.stderr)  # a terminal has one output stream
    await ws.send(bytes([ERROR]) + _status(command, result, None))


async def _interactive(
    ws: websocket.WebSocket,
    protocol: str,
    shell: Shell,
    send: Callable[[int, bytes], Awaitable[None]],
    *,
    tty: bool,
) -> Result:
    """A shell reading its stdin: each line run as it completes, until `exit` or the end of
    stdin (v5's close of channel 0, or the connection's)."""
    prompt = b"# " if tty else b""
    if tty and shell.size is None:
        shell.size = (24, 80)  # until the client's first resize message (kubectl sends one at once)
    await send(STDOUT, prompt)
    line = b""
    last = Result()
    while True:
        try:
            _, message = await ws.receive()
        except websocket.Closed:
            return last
        if not message:
            continue
        channel, data = message[0], message[1:]
        if channel == CLOSE and protocol.startswith("v5") and data[:1] == bytes([STDIN]):
            if line.strip():
                last = await _line(shell, line, send, tty)
            return last
        if channel == RESIZE and tty:
            _resize(shell, data)
            continue
        if channel != STDIN:
            continue
        for byte in data:
            char = bytes([byte])
            if tty and char == b"\x04" and not line:
                return last
            if tty and char in (b"\x7f", b"\x08"):
                if line:
                    line = line[:-1]
                    await send(STDOUT, b"\b \b")
                continue
            if char in (b"\r", b"\n"):
                if tty:
                    await send(STDOUT, b"\r\n")
                words = line.decode("utf-8", "replace").split()
                if words[:1] == ["exit"]:
                    code = int(words[1]) if len(words) > 1 and words[1].isdigit() else last.code
                    return Result(code=code)
                if line.strip():
                    last = await _line(shell, line, send, tty)
                line = b""
                await send(STDOUT, prompt)
                continue
            line += char
            if tty:
                await send(STDOUT, char)


def _resize(shell: Shell, data: bytes) -> None:
    """Apply a TerminalSize message; one that does not decode is dropped, as the kubelet logs
    and ignores it."""
    try:
        size = orjson.loads(data)
        columns, rows = int(size["Width"]), int(size["Height"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return
    if columns > 0 and rows > 0:
        shell.size = (rows, columns)


async def _line(
    shell: Shell, line: bytes, send: Callable[[int, bytes], Awaitable[None]], tty: bool
) -> Result:
    result = shell.script(line.decode("utf-8", "replace"))
    if result.sleep:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(result.sleep)
    if tty:
        await send(STDOUT, (result.stdout + result.stderr).replace(b"\n", b"\r\n"))
    else:
        await send(STDOUT, result.stdout)
        await send(STDERR, result.stderr)
    return result
