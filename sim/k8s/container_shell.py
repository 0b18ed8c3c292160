"""What a command run with `kubectl exec` (the `pods/exec` subresource) does in a simulated
container: a small POSIX-like shell whose answers come from the pod itself.

- `env` / `printenv`: the container's environment as the kubelet builds it (`env` values,
  `valueFrom` field, ConfigMap and Secret references, `envFrom`, then HOSTNAME, HOME, PATH and
  the `kubernetes` Service's KUBERNETES_SERVICE_HOST/PORT).
- files: ConfigMap, Secret and downward-API volumes hold their keys as files; the service
  account's `namespace` file; `/etc/hostname`; mounted storage (S3, FSx, hostPath, emptyDir)
  lists what containers wrote there (`sim.k8s.files`), and `echo ... > file` writes there, so
  another pod mounting the same bucket sees the file.
- `nvidia-smi` (and `-L`): the GPUs the container was given (its `nvidia.com/gpu` limit), of the
  model the node's instance type carries; a container with no GPU has no `nvidia-smi`, as with
  the NVIDIA container runtime.
- `echo`, `printf`, `cat`, `ls`, `hostname`, `pwd`, `whoami`, `id`, `uname`, `date`, `true`,
  `false`, `exit N`, `sleep N`, `ps`, and `sh -c` / `bash -c` with `;`, `&&`, `||`.

Anything else is "not found" (exit 127) inside a shell, and the runtime's "executable file not
found in $PATH" when it is the command exec runs. File contents the simulation does not hold (a
model's weights) are not invented: `cat` says how many bytes the file has.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sim.k8s.files import SharedFiles, locate
from sim.k8s.instances import capacity
from sim.k8s.store import Obj, Store

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

# GPU model by instance family, from "Amazon EC2 accelerated computing instances"
# (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html): name and memory in MiB.
GPU_MODELS: dict[str, tuple[str, int]] = {
    "p5": ("NVIDIA H100 80GB HBM3", 81559),
    "p5e": ("NVIDIA H200", 143771),
    "p5en": ("NVIDIA H200", 143771),
    "p4d": ("NVIDIA A100-SXM4-40GB", 40960),
    "p4de": ("NVIDIA A100-SXM4-80GB", 81920),
    "p6-b200": ("NVIDIA B200", 183359),
    "g5": ("NVIDIA A10G", 23028),
    "g6": ("NVIDIA L4", 23034),
    "g6e": ("NVIDIA L40S", 46068),
}


class NotFound(Exception):
    """The command exec was asked to run is not in the container."""


@dataclass
class Result:
    stdout: bytes = b""
    stderr: bytes = b""
    code: int = 0
    sleep: float = 0.0  # seconds the command takes: the caller waits them before answering


@dataclass
class Container:
    """One container of a running pod, as `exec` sees it."""

    store: Store
    files: SharedFiles
    cluster: str
    pod: Obj
    spec: Obj
    node: Obj | None
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.env = environment(self.store, self.pod, self.spec)

    # -- files ----------------------------------------------------------------------------

    def _key_volume(self, path: str) -> dict[str, bytes] | None:
        """The files of a ConfigMap, Secret or downward-API volume mounted at or above `path`."""
        ns = self.pod["metadata"].get("namespace", "default")
        for mount in self.spec.get("volumeMounts") or []:
            base = posixpath.normpath(str(mount.get("mountPath", "/")))
            if path != base and not path.startswith(base.rstrip("/") + "/"):
                continue
            volume: Obj = next(
                (
                    v
                    for v in self.pod["spec"].get("volumes") or []
                    if v.get("name") == mount.get("name")
                ),
                {},
            )
            found = self._volume_files(volume, ns)
            if found is None:
                continue
            relative = "" if path == base else posixpath.relpath(path, base)
            if mount.get("subPath"):
                relative = posixpath.join(str(mount["subPath"]), relative).rstrip("/")
            return _under(found, relative)
        if path == SERVICE_ACCOUNT_DIR or path.startswith(SERVICE_ACCOUNT_DIR + "/"):
            relative = (
                "" if path == SERVICE_ACCOUNT_DIR else posixpath.relpath(path, SERVICE_ACCOUNT_DIR)
            )
            return _under({"namespace": ns.encode()}, relative)
        return None

    def _volume_files(self, volume: Obj, ns: str) -> dict[str, bytes] | None:
        if "configMap" in volume or "secret" in volume:
            is_secret = "secret" in volume
            source = volume["secret" if is_secret else "configMap"]
            name = source.get("secretName" if is_secret else "name", "")
            obj = self.store.get("secrets" if is_secret else "configmaps", ns, name) or {}
            data: dict[str, bytes] = {}
            for key, value in (obj.get("data") or {}).items():
                data[key] = base64.b64decode(value) if is_secret else str(value).encode()
            for key, value in (obj.get("stringData") or {}).items():
                data[key] = str(value).encode()
            items = source.get("items")
            if items:
                data = {i["path"]: data[i["key"]] for i in items if i.get("key") in data}
            return data
        if "downwardAPI" in volume:
            out = {}
            for item in volume["downwardAPI"].get("items") or []:
                ref = (item.get("fieldRef") or {}).get("fieldPath", "")
                out[item.get("path", "")] = field_value(self.pod, ref).encode()
            return out
        return None

    def read(self, path: str) -> bytes | int | None:
        """A file's bytes, its size when only that is simulated, or None when there is none."""
        path = posixpath.normpath(posixpath.join(self.env.get("PWD", "/"), path))
        if path == "/etc/hostname":
            return (str(self.pod["metadata"]["name"]) + "\n").encode()
        keyed = self._key_volume(path)
        if keyed is not None:
            return keyed.get("")
        volume, inside = locate(self.store, self.cluster, self.pod, self.spec, path)
        return self.files.size(volume, inside)

    def listing(self, path: str) -> dict[str, int] | None:
        """The entries of a directory (name -> size, -1 for a directory), None if it is none."""
        path = posixpath.normpath(posixpath.join(self.env.get("PWD", "/"), path))
        keyed = self._key_volume(path)
        entries: dict[str, int] = {}
        if keyed is not None:
            if "" in keyed:
                return None
            for name, value in keyed.items():
                head, _, rest = name.partition("/")
                entries[head] = -1 if rest else len(value)
            return entries
        volume, inside = locate(self.store, self.cluster, self.pod, self.spec, path)
        for name, size in self.files.listing(volume, inside).items():
            head, _, rest = name[len(inside) :].lstrip("/").partition("/")
            entries[head] = -1 if rest else size
        mounts = [str(m.get("mountPath", "")) for m in self.spec.get("volumeMounts") or []]
        for mount in mounts:
            parent, _, child = mount.rstrip("/").rpartition("/")
            if (parent or "/") == path and child:
                entries.setdefault(child, -1)
        if (
            not entries
            and path not in ("/", *mounts)
            and self.files.size(volume, inside) is not None
        ):
            return None
        return entries

    def write(self, path: str, data: bytes, append: bool) -> str | None:
        path = posixpath.normpath(posixpath.join(self.env.get("PWD", "/"), path))
        if self._key_volume(path) is not None:
            return f"{path}: Read-only file system"
        volume, inside = locate(self.store, self.cluster, self.pod, self.spec, path)
        before = self.files.size(volume, inside) if append else 0
        self.files.put(volume, inside, (before or 0) + len(data))
        return None

    # -- GPUs -----------------------------------------------------------------------------

    def gpus(self) -> list[tuple[str, int, str]]:
        """(model, memory MiB, UUID) of each GPU given to the container."""
        resources = self.spec.get("resources") or {}
        count = int(str((resources.get("limits") or {}).get("nvidia.com/gpu", "0")) or 0)
        labels = ((self.node or {}).get("metadata") or {}).get("labels") or {}
        instance_type = str(labels.get("node.kubernetes.io/instance-type", ""))
        family = instance_type.removeprefix("ml.").split(".")[0]
        model, memory = GPU_MODELS.get(family, ("NVIDIA GPU", 16384))
        count = min(count, capacity(instance_type).gpus) if instance_type else count
        node = ((self.node or {}).get("metadata") or {}).get("name", "")
        return [(model, memory, "GPU-" + str(_uuid(f"{node}/{i}"))) for i in range(count)]


def _under(files: dict[str, bytes], relative: str) -> dict[str, bytes]:
    """The files at or below `relative`, named relative to it ("" for the file itself)."""
    if not relative:
        return dict(files)
    return {
        k[len(relative) :].lstrip("/"): v
        for k, v in files.items()
        if k == relative or k.startswith(relative + "/")
    }


def _uuid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def field_value(pod: Obj, path: str) -> str:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": status.get("podIP", ""),
        "status.hostIP": status.get("hostIP", ""),
    }
    if path in simple:
        return str(simple[path])
    for prefix, source in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str((meta.get(source) or {}).get(path[len(prefix) + 2 : -2], ""))
    return ""


def environment(store: Store, pod: Obj, container: Obj) -> dict[str, str]:
    """The environment the kubelet gives `container` (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables)."""
    ns = pod["metadata"].get("namespace", "default")
    env: dict[str, str] = {"PATH": PATH, "HOSTNAME": pod["metadata"]["name"], "HOME": "/root"}
    kubernetes = store.get("services", "default", "kubernetes")
    if kubernetes is not None:
        host = str((kubernetes.get("spec") or {}).get("clusterIP", ""))
        env.update(
            KUBERNETES_SERVICE_HOST=host,
            KUBERNETES_SERVICE_PORT="443",
            KUBERNETES_PORT=f"tcp://{host}:443",
        )

    def decoded(kind: str, name: str) -> dict[str, str]:
        obj = store.get(kind, ns, name) or {}
        values = {
            k: base64.b64decode(v).decode("utf-8", "replace") if kind == "secrets" else str(v)
            for k, v in (obj.get("data") or {}).items()
        }
        values.update({k: str(v) for k, v in (obj.get("stringData") or {}).items()})
        return values

    for source in container.get("envFrom") or []:
        ref = source.get("configMapRef") or source.get("secretRef") or {}
        kind = "configmaps" if "configMapRef" in source else "secrets"
        for key, value in decoded(kind, ref.get("name", "")).items():
            env[str(source.get("prefix", "")) + key] = value
    for item in container.get("env") or []:
        name = item.get("name", "")
        if "value" in item:
            env[name] = _expand(str(item["value"]), env)
            continue
        ref = item.get("valueFrom") or {}
        if "fieldRef" in ref:
            env[name] = field_value(pod, ref["fieldRef"].get("fieldPath", ""))
        elif "configMapKeyRef" in ref or "secretKeyRef" in ref:
            kind = "configmaps" if "configMapKeyRef" in ref else "secrets"
            key_ref = ref.get("configMapKeyRef") or ref.get("secretKeyRef") or {}
            found = decoded(kind, key_ref.get("name", "")).get(key_ref.get("key", ""))
            if found is not None:
                env[name] = found
        elif "resourceFieldRef" in ref:
            resource = ref["resourceFieldRef"].get("resource", "")
            kind, _, what = resource.partition(".")
            env[name] = str(((container.get("resources") or {}).get(kind) or {}).get(what, "0"))
        else:
            env[name] = ""
    if container.get("workingDir"):
        env["PWD"] = str(container["workingDir"])
    return env


def _expand(value: str, env: dict[str, str]) -> str:
    """`$(VAR)` references to earlier variables, as the kubelet expands them."""
    out, i = [], 0
    while i < len(value):
        if value.startswith("$$", i):
            out.append("$")
            i += 2
        elif value.startswith("$(", i) and ")" in value[i:]:
            end = value.index(")", i)
            name = value[i + 2 : end]
            out.append(env.get(name, value[i : end + 1]))
            i = end + 1
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


# -- the shell ------------------------------------------------------------------------------

Builtin = Callable[["Shell", list[str]], Result]


class Shell:
    """Runs commands in one container; `run` is what `exec` calls with the request's argv."""

    def __init__(self, container: Container) -> None:
        self.c = container
        # (rows, columns) of the terminal the exec session has (tty=true), as its resize
        # channel last set it; None without a terminal
        self.size: tuple[int, int] | None = None

    def run(self, argv: list[str], stdin: bytes = b"") -> Result:
        if not argv:
            return Result(
                stderr=b"you must specify at least one command for the container\n", code=1
            )
        if argv[0] in ("sh", "bash", "/bin/sh", "/bin/bash"):
            if len(argv) >= 3 and argv[1] == "-c":
                return self.script(argv[2])
            return self.script(stdin.decode("utf-8", "replace"))
        name = posixpath.basename(argv[0])
        if name not in COMMANDS or not self._present(name):
            raise NotFound(argv[0])
        return COMMANDS[name](self, argv)

    def _present(self, name: str) -> bool:
        return name != "nvidia-smi" or bool(self.c.gpus())

    def script(self, text: str) -> Result:
        """A shell script: lines and `;`, `&&`, `||` lists of simple commands, `>`/`>>` redirects."""
        out = Result()
        for line in text.replace("\r", "").split("\n"):
            try:
                lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|>")
                lexer.whitespace_split = True
                lexer.commenters = "#"
                tokens = list(lexer)
            except ValueError as exc:
                out.stderr += f"sh: syntax error: {exc}\n".encode()
                out.code = 2
                return out
            command: list[str] = []
            skip = False
            for token in [*tokens, ";"]:
                if token not in (";", "&&", "||"):
                    command.append(token)
                    continue
                if command and not skip:
                    if command[0] == "exit":
                        out.code = (
                            int(command[1])
                            if len(command) > 1 and command[1].isdigit()
                            else out.code
                        )
                        return out
                    step = self._simple(command)
                    out.stdout += step.stdout
                    out.stderr += step.stderr
                    out.code = step.code
                    out.sleep += step.sleep
                command = []
                skip = (token == "&&" and out.code != 0) or (token == "||" and out.code == 0)
        return out

    def _simple(self, words: list[str]) -> Result:
        target, append = None, False
        for op in (">>", ">"):
            if op in words and words.index(op) + 1 < len(words):
                at = words.index(op)
                target, append = words[at + 1], op == ">>"
                words = words[:at] + words[at + 2 :]
                break
        words = [self._vars(w) for w in words]
        name = posixpath.basename(words[0]) if words else ""
        if name not in COMMANDS or not self._present(name):
            return Result(
                stderr=f"sh: 1: {words[0] if words else ''}: not found\n".encode(), code=127
            )
        result = COMMANDS[name](self, words)
        if target is not None:
            problem = self.c.write(target, result.stdout, append)
            if problem:
                return Result(stderr=f"sh: 1: cannot create {problem}\n".encode(), code=2)
            result = Result(stderr=result.stderr, code=result.code, sleep=result.sleep)
        return result

    def _vars(self, word: str) -> str:
        for name in sorted(self.c.env, key=len, reverse=True):
            word = word.replace("${" + name + "}", self.c.env[name]).replace(
                "$" + name, self.c.env[name]
            )
        return word


def _echo(sh: Shell, argv: list[str]) -> Result:
    words = argv[1:]
    newline = True
    if words and words[0] == "-n":
        newline, words = False, words[1:]
    return Result(stdout=(" ".join(words) + ("\n" if newline else "")).encode())


def _printf(sh: Shell, argv: list[str]) -> Result:
    if len(argv) < 2:
        return Result(stderr=b"printf: usage: printf format [arguments]\n", code=2)
    text = argv[1].replace("\\n", "\n").replace("\\t", "\t")
    try:
        return Result(stdout=(text % tuple(argv[2:]) if "%" in text else text).encode())
    except (TypeError, ValueError):
        return Result(stdout=text.encode())


def _env(sh: Shell, argv: list[str]) -> Result:
    if len(argv) > 1:
        found = [sh.c.env[n] for n in argv[1:] if n in sh.c.env]
        return Result(stdout="".join(v + "\n" for v in found).encode(), code=0 if found else 1)
    return Result(stdout="".join(f"{k}={v}\n" for k, v in sh.c.env.items()).encode())


def _cat(sh: Shell, argv: list[str]) -> Result:
    out = Result()
    for path in argv[1:]:
        found = sh.c.read(path)
        if found is None:
            out.stderr += f"cat: {path}: No such file or directory\n".encode()
            out.code = 1
        elif isinstance(found, int):
            out.stderr += f"cat: {path}: {found} bytes not held by the simulation\n".encode()
            out.code = 1
        else:
            out.stdout += found
    return out


def _ls(sh: Shell, argv: list[str]) -> Result:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-"))
    paths = [a for a in argv[1:] if not a.startswith("-")] or [sh.c.env.get("PWD", "/")]
    out = Result()
    for path in paths:
        entries = sh.c.listing(path)
        if entries is None:
            if sh.c.read(path) is not None:
                out.stdout += f"{path}\n".encode()
                continue
            out.stderr += f"ls: cannot access '{path}': No such file or directory\n".encode()
            out.code = 2
            continue
        if len(paths) > 1:
            out.stdout += f"{path}:\n".encode()
        for name in sorted(entries):
            size = entries[name]
            if "l" in flags:
                kind, shown = ("d", 4096) if size < 0 else ("-", size)
                out.stdout += f"{kind}rw-r--r-- 1 root root {shown:>10} {name}\n".encode()
            else:
                out.stdout += f"{name}\n".encode()
    return out


def _nvidia_smi(sh: Shell, argv: list[str]) -> Result:
    gpus = sh.c.gpus()
    if "-L" in argv:
        return Result(
            stdout="".join(
                f"GPU {i}: {m} (UUID: {u})\n" for i, (m, _, u) in enumerate(gpus)
            ).encode()
        )
    stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime())
    lines = [
        stamp,
        "+-----------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI 570.172.08             Driver Version: 570.172.08     CUDA Version: 12.8     |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                               | Bus-Id          Disp.A | Memory-Usage         |",
        "|=========================================+========================+======================|",
    ]
    for i, (model, memory, _) in enumerate(gpus):
        lines.append(
            f"| {i:>3}  {model[:34]:<34} | 00000000:{0x10 + i:02X}:00.0 Off | {0:>6}MiB / {memory:>6}MiB |"
        )
    lines.append(
        "+-----------------------------------------+------------------------+----------------------+"
    )
    return Result(stdout=("\n".join(lines) + "\n").encode())


def _fixed(text: Callable[[Shell], str], code: int = 0) -> Builtin:
    return lambda sh, argv: Result(stdout=text(sh).encode(), code=code)


def _exit(sh: Shell, argv: list[str]) -> Result:
    return Result(code=int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 0)


def _sleep(sh: Shell, argv: list[str]) -> Result:
    try:
        return Result(sleep=float(argv[1]) if len(argv) > 1 else 0.0)
    except ValueError:
        return Result(stderr=f"sleep: invalid time interval '{argv[1]}'\n".encode(), code=1)


def _stty(sh: Shell, argv: list[str]) -> Result:
    """`stty size`: the terminal's rows and columns (GNU coreutils' answer); without a terminal
    stdin is not one, and coreutils says so."""
    if sh.size is None:
        return Result(stderr=b"stty: 'standard input': Inappropriate ioctl for device\n", code=1)
    if argv[1:] == ["size"]:
        return Result(stdout=f"{sh.size[0]} {sh.size[1]}\n".encode())
    return Result(
        stderr=f"stty: only `stty size` is served here, not {argv[1:]}\n".encode(), code=1
    )


def _ps(sh: Shell, argv: list[str]) -> Result:
    command = " ".join(
        str(w) for w in [*(sh.c.spec.get("command") or []), *(sh.c.spec.get("args") or [])]
    ) or str(sh.c.spec.get("image", ""))
    return Result(
        stdout=f"    PID TTY          TIME CMD\n      1 ?        00:00:01 {command}\n".encode()
    )


COMMANDS: dict[str, Builtin] = {
    "echo": _echo,
    "printf": _printf,
    "env": _env,
    "printenv": _env,
    "cat": _cat,
    "ls": _ls,
    "nvidia-smi": _nvidia_smi,
    "hostname": _fixed(lambda sh: sh.c.pod["metadata"]["name"] + "\n"),
    "pwd": _fixed(lambda sh: sh.c.env.get("PWD", "/") + "\n"),
    "whoami": _fixed(lambda sh: "root\n"),
    "id": _fixed(lambda sh: "uid=0(root) gid=0(root) groups=0(root)\n"),
    "uname": _fixed(lambda sh: "Linux\n"),
    "date": _fixed(lambda sh: time.strftime("%a %b %d %H:%M:%S UTC %Y\n", time.gmtime())),
    "true": _fixed(lambda sh: ""),
    "false": _fixed(lambda sh: "", code=1),
    "exit": _exit,
    "sleep": _sleep,
    "ps": _ps,
    "stty": _stty,
}
