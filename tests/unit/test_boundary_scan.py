"""No route, tool, client or renderer builds a URL path, a shell line or an object name by
joining values into a string: they go through the constructors of `shared/boundary.py`.

The allowed constructors:
- URL paths: `api_path` (our REST API), `url_path` and `path_segment` (any other), and the
  kubernetes client's own `path_params`;
- shell lines: `shell_line` and `shell_script` (arguments from lists, each quoted);
- Kubernetes object names: `object_name` (and `dns_label`, `dns_subdomain`, `label_value`,
  `model_id`, `namespace` to check a whole value).

The scan is an AST check, so it sees through formatting: an f-string whose text starts with
'/' and that formats a value is a path built by hand; one in a renderer whose text holds a
shell operator or a command-line flag before a formatted value is a shell line built by hand;
one in a renderer that is name-shaped (`{spec.name}-workers`) is an object name built by hand.
`" ".join(...)` in a renderer and `shell=True` anywhere are refused outright.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Where user values become URL paths: routes, tools, the REST clients, the services' queries and
# adapters.
PATH_SCOPES = (
    "services/gateway/gateway/**/*.py",
    "services/mcp-svc/mcp_svc/**/*.py",
    "services/*/*/queries.py",
    "services/*/*/access.py",
    "services/*/*/adapters/*.py",
    "shared/adapters/*.py",
    "hyperpilot/**/*.py",
)
# Where specs become Kubernetes objects and command lines.
RENDER_SCOPES = ("services/*/*/domain/render*.py",)
EVERYWHERE = ("services/**/*.py", "shared/**/*.py", "hyperpilot/**/*.py")

_SHELL_TEXT = re.compile(r"&&|\|\||\$\(|`|\s\|\s|;\s|(^|\s)--?[A-Za-z][-A-Za-z_]*[= ]?$")
_NAME_TEXT = re.compile(r"^[a-z0-9.-]*$")


def _files(patterns: tuple[str, ...]) -> list[Path]:
    return sorted({p for pattern in patterns for p in ROOT.glob(pattern)})


def _formatted(node: ast.JoinedStr) -> bool:
    return any(isinstance(v, ast.FormattedValue) for v in node.values)


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}: {ast.unparse(node)[:90]}"


def _fstrings(path: Path) -> list[ast.JoinedStr]:
    tree = ast.parse(path.read_text(), str(path))
    # The parts of an f-string's format spec are JoinedStr nodes too; only outer ones count.
    specs = {
        id(v.format_spec)
        for n in ast.walk(tree)
        if isinstance(n, ast.FormattedValue) and v_spec(n)
        for v in [n]
    }
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.JoinedStr) and id(n) not in specs and _formatted(n)
    ]


def v_spec(node: ast.FormattedValue) -> bool:
    return node.format_spec is not None


def hand_built_paths() -> list[str]:
    found = []
    for path in _files(PATH_SCOPES):
        for node in _fstrings(path):
            first = node.values[0]
            if (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and first.value.startswith("/")
                and len(first.value) > 1
            ):
                found.append(_where(path, node))
    return found


def hand_built_shell_lines() -> list[str]:
    found = []
    for path in _files(RENDER_SCOPES):
        for node in _fstrings(path):
            texts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            # text right before a formatted value: `--model {x}`, `; {x}`
            before = [
                v.value
                for v, nxt in zip(node.values, node.values[1:], strict=False)
                if isinstance(v, ast.Constant) and isinstance(nxt, ast.FormattedValue)
            ]
            if any(_SHELL_TEXT.search(t) for t in before) or any(
                op in t for t in texts for op in ("&&", "||", "$(", "`")
            ):
                found.append(_where(path, node))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "join"
                and isinstance(node.func.value, ast.Constant)
                and node.func.value.value in (" ", " && ", "; ", " ; ")
            ):
                found.append(_where(path, node))
    return found


def hand_built_names() -> list[str]:
    found = []
    for path in _files(RENDER_SCOPES):
        for node in _fstrings(path):
            texts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            if (
                texts
                and all(isinstance(t, str) and _NAME_TEXT.match(t) for t in texts)
                and any("-" in t or "." in t for t in texts)
                and not any(v.format_spec for v in node.values if isinstance(v, ast.FormattedValue))
            ):
                found.append(_where(path, node))
    return found


def shell_true() -> list[str]:
    found = []
    for path in _files(EVERYWHERE):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if (
                        kw.arg == "shell"
                        and isinstance(kw.value, ast.Constant)
                        and kw.value.value is True
                    ):
                        found.append(_where(path, node))
                name = node.func.attr if isinstance(node.func, ast.Attribute) else None
                if name in ("create_subprocess_shell", "system", "popen"):
                    found.append(_where(path, node))
    return found


def test_no_url_path_is_built_from_an_f_string() -> None:
    assert hand_built_paths() == [], "build REST paths with shared.boundary.api_path/url_path"


def test_no_shell_line_is_built_by_hand() -> None:
    assert hand_built_shell_lines() == [], "build shell lines with shared.boundary.shell_line"


def test_no_object_name_is_built_from_an_f_string() -> None:
    assert hand_built_names() == [], "build object names with shared.boundary.object_name"


def test_nothing_runs_a_shell() -> None:
    assert shell_true() == []


def test_the_scan_sees_each_kind_of_hand_built_string(tmp_path: Path) -> None:
    """The scan itself: each rule catches its example (so a passing scan means something)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(spec, model, cluster):\n"
        "    a = f'/api/v1/clusters/{cluster}/jobs'\n"
        "    b = f'python -m x --model {model} && rm -rf /'\n"
        "    c = f'{spec.name}-{model}'\n"
        "    d = ' '.join(['a', model])\n"
        "    e = f'{spec.value:g}'\n"
        "    import subprocess; subprocess.run(b, shell=True)\n"
    )
    nodes = _fstrings(sample)
    texts = [ast.unparse(n) for n in nodes]
    assert len(texts) == 4  # e's format spec is not counted twice
    global ROOT
    saved = ROOT
    try:
        ROOT = tmp_path
        scopes = globals()
        for name in ("PATH_SCOPES", "RENDER_SCOPES", "EVERYWHERE"):
            scopes[f"_saved_{name}"] = scopes[name]
            scopes[name] = ("sample.py",)
        assert len(hand_built_paths()) == 1
        assert len(hand_built_shell_lines()) == 2  # b, and the join
        assert len(hand_built_names()) == 1
        assert len(shell_true()) == 1
    finally:
        ROOT = saved
        for name in ("PATH_SCOPES", "RENDER_SCOPES", "EVERYWHERE"):
            scopes[name] = scopes.pop(f"_saved_{name}")
