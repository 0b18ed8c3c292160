"""Rendering of what the gateway answers: a rich table for people, JSON or YAML for scripts."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TextIO

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text


class Format(StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


def default_format() -> Format:
    value = os.environ.get("HYPERPILOT_OUTPUT", "table").lower()
    try:
        return Format(value)
    except ValueError:
        return Format.TABLE


def console(file: TextIO | None = None) -> Console:
    """A console on stdout (or `file`); wide enough when piped that tables don't fold."""
    target = file or sys.stdout
    width = None
    if not target.isatty():
        width = int(os.environ.get("COLUMNS", "0") or 0) or 160
    # Text from the server (messages, names) is printed as is: no markup, no emoji codes.
    return Console(
        file=target, width=width, highlight=False, soft_wrap=False, markup=False, emoji=False
    )


def err_console() -> Console:
    return console(sys.stderr)


@dataclass(frozen=True)
class Column:
    header: str
    key: str | Callable[[dict[str, Any]], Any]
    style: str | None = None
    wrap: bool = False

    def value(self, row: dict[str, Any]) -> Any:
        if callable(self.key):
            return self.key(row)
        value: Any = row
        for part in self.key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value


def cell(value: Any) -> str:
    """One value as table text: nothing as '-', times to the second, structures as compact JSON."""
    if value is None or value == "" or value == [] or value == {}:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return short_time(value)
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


def short_time(value: str) -> str:
    """'2026-11-29T17:20:01.123456+00:00' -> '2026-11-29 17:20:01Z'; other text unchanged."""
    if len(value) >= 19 and value[4] == "-" and value[10] == "T" and value[13] == ":":
        suffix = "Z" if value.endswith(("+00:00", "Z")) else ""
        return value[:10] + " " + value[11:19] + suffix
    return value


STATUS_STYLES = {
    "succeeded": "green",
    "available": "green",
    "active": "green",
    "imported": "green",
    "noop": "green",
    "running": "cyan",
    "creating": "cyan",
    "deleting": "yellow",
    "pending": "yellow",
    "retrying": "yellow",
    "failed": "red",
    "cancelled": "magenta",
}


def status_text(status: Any) -> Text:
    text = cell(status)
    return Text(text, style=STATUS_STYLES.get(text, ""))


def table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], title: str | None = None
) -> Table:
    out = Table(title=title, show_edge=False, header_style="bold", box=None, pad_edge=False)
    for column in columns:
        out.add_column(
            column.header,
            style=column.style,
            no_wrap=not column.wrap,
            overflow="fold" if column.wrap else "ellipsis",
        )
    for row in rows:
        values: list[Text | str] = []
        for column in columns:
            value = column.value(row)
            values.append(status_text(value) if column.header == "STATUS" else cell(value))
        out.add_row(*values)
    return out


def auto_columns(rows: Sequence[dict[str, Any]]) -> list[Column]:
    """Columns for rows whose shape the CLI does not know: every key, in first-seen order."""
    keys: list[str] = []
    for row in rows:
        for key in row:
            if key not in keys:
                keys.append(key)
    return [Column(key.upper().replace("_", " "), key, wrap=True) for key in keys]


def details(obj: dict[str, Any], keys: Sequence[str] | None = None) -> Table:
    """One object as a two-column FIELD/VALUE table."""
    out = Table(show_header=False, box=None, pad_edge=False)
    out.add_column("field", style="bold")
    out.add_column("value", overflow="fold")
    for key in keys or list(obj):
        if key not in obj:
            continue
        value = obj[key]
        out.add_row(key, status_text(value) if key == "status" else cell(value))
    return out


def compact(value: Any, limit: int = 100) -> str:
    """The identifiers in a nested result, as 'key=value' pairs: scalars and lists of scalars
    at the top level; long strings (certificates) and nested objects are left to -o yaml."""
    if not isinstance(value, dict):
        return cell(value)
    pairs: list[str] = []
    for key, item in value.items():
        if isinstance(item, list) and all(isinstance(i, str | int | float) for i in item):
            item = ",".join(str(i) for i in item)
        if isinstance(item, bool) or item is None or isinstance(item, dict | list):
            continue
        text = str(item)
        if text and len(text) <= limit:
            pairs.append(f"{key}={text}")
    return "  ".join(pairs) or "-"


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)


def to_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)


def emit(
    data: Any,
    fmt: Format,
    render: Callable[[Any], Any] | None = None,
    *,
    out: Console | None = None,
) -> None:
    """Print `data` as JSON, YAML, or (for table) what `render` makes of it."""
    if fmt is Format.JSON:
        sys.stdout.write(to_json(data) + "\n")
    elif fmt is Format.YAML:
        sys.stdout.write(to_yaml(data))
    else:
        target = out or console()
        if render is not None:
            target.print(render(data))
        elif isinstance(data, list) and all(isinstance(r, dict) for r in data):
            if data:
                target.print(table(data, auto_columns(data)))
            else:
                target.print("(none)")
        elif isinstance(data, dict):
            target.print(details(data))
        else:
            target.print(cell(data))
    sys.stdout.flush()
