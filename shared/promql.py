"""PromQL-lite: the part of PromQL the metrics route answers, parsed and evaluated over samples.

Grammar (a subset of https://prometheus.io/docs/prometheus/latest/querying/basics/):

    query    := agg | func | selector
    agg      := ("sum"|"avg"|"max"|"min"|"count") [("by"|"without") "(" labels ")"] "(" query ")"
                [("by"|"without") "(" labels ")"]
    func     := ("rate"|"increase") "(" selector "[" duration "]" ")"
              | ("avg_over_time"|"max_over_time"|"min_over_time") "(" selector "[" duration "]" ")"
    selector := metric ["{" matcher ("," matcher)* "}"]
    matcher  := label ("="|"!="|"=~"|"!~") "string"

Evaluation follows Prometheus: an instant selector takes each series' newest sample within the
5 minute lookback, unless that sample is a staleness marker (NaN: the series ended); `rate` is the per-second increase over the window, counter resets taken in
(the window's first to last sample, not extrapolated); aggregation drops `__name__`; a range
query evaluates the instant query at start, start+step, ... end. Answers are the Prometheus
HTTP API's `data` (`resultType` vector or matrix, `[timestamp, "value"]` pairs).
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LOOKBACK = 300.0  # seconds: Prometheus's default lookback delta
MAX_POINTS = 1_100  # points one range query may answer per series
MAX_QUERY = 500  # characters
AGGREGATIONS = ("sum", "avg", "max", "min", "count")
RANGE_FUNCTIONS = ("rate", "increase", "avg_over_time", "max_over_time", "min_over_time")
_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_TOKEN = re.compile(
    r"\s*(?:(?P<str>\"(?:[^\"\\]|\\.)*\")|(?P<cmp>==|>=|<=|>|<)|(?P<op>=~|!~|!=|=|[{}()\[\],])"
    r"|(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)|(?P<dur>\d+(?:ms|s|m|h|d))|(?P<num>-?\d+(?:\.\d+)?))"
)

Labels = tuple[tuple[str, str], ...]
Series = Mapping[
    Labels, Sequence[tuple[float, float]]
]  # labels -> (timestamp, value), oldest first


class QueryError(ValueError):
    """A query the route cannot answer: what is wrong and what to send instead."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        have = labels.get(self.label, "")
        if self.op == "=":
            return have == self.value
        if self.op == "!=":
            return have != self.value
        hit = re.fullmatch(self.value, have) is not None
        return hit if self.op == "=~" else not hit


@dataclass(frozen=True)
class Selector:
    metric: str
    matchers: tuple[Matcher, ...] = ()
    window: float | None = None  # a range selector's [duration], in seconds


@dataclass(frozen=True)
class Function:
    name: str
    arg: Selector


@dataclass(frozen=True)
class Aggregation:
    op: str
    arg: Expr
    labels: tuple[str, ...] = ()
    without: bool = False


@dataclass(frozen=True)
class Comparison:
    """`expr > 0`: the series of `expr` whose value compares true (Prometheus's filter)."""

    op: str
    arg: Expr
    threshold: float


Expr = Selector | Function | Aggregation | Comparison
COMPARE: dict[str, Callable[[float, float], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}


def duration(text: str, what: str = "duration") -> float:
    found = _DURATION.match(text)
    if found is None:
        raise QueryError(f"{what} {text!r} is not a duration", "write it as 30s, 5m, 1h")
    return int(found.group(1)) * _UNITS[found.group(2)]


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        if found is None or found.end() == pos:
            raise QueryError(
                f"unexpected character {text[pos:].lstrip()[:1]!r} at position {pos}",
                "write a metric with label matchers, rate(...[5m]) or avg by (label) (...)",
            )
        kind = found.lastgroup
        assert kind is not None
        out.append((kind, found.group(kind)))
        pos = found.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kind: str, value: str | None = None) -> str:
        token = self.peek()
        if token is None or token[0] != kind or (value is not None and token[1] != value):
            got = "the end" if token is None else repr(token[1])
            want = repr(value) if value is not None else {"name": "a name"}.get(kind, kind)
            raise QueryError(f"expected {want}, found {got}", "check the query's brackets")
        self.pos += 1
        return token[1]

    def labels(self) -> tuple[str, ...]:
        self.take("op", "(")
        names: list[str] = []
        while self.peek() != ("op", ")"):
            names.append(self.take("name"))
            if self.peek() == ("op", ","):
                self.pos += 1
        self.take("op", ")")
        return tuple(names)

    def grouping(self) -> tuple[tuple[str, ...], bool] | None:
        token = self.peek()
        if token in (("name", "by"), ("name", "without")):
            self.pos += 1
            return self.labels(), token == ("name", "without")
        return None

    def expr(self) -> Expr:
        name = self.take("name")
        if name in AGGREGATIONS:
            grouping = self.grouping()
            self.take("op", "(")
            arg = self.expr()
            self.take("op", ")")
            grouping = grouping or self.grouping() or ((), False)
            return Aggregation(name, arg, grouping[0], grouping[1])
        if name in RANGE_FUNCTIONS:
            self.take("op", "(")
            selector = self.selector(self.take("name"))
            self.take("op", ")")
            if selector.window is None:
                raise QueryError(
                    f"{name}() takes a range selector", f"write {name}({selector.metric}[5m])"
                )
            return Function(name, selector)
        if self.peek() == ("op", "("):
            raise QueryError(
                f"function {name}() is not supported here",
                f"use one of {', '.join(AGGREGATIONS + RANGE_FUNCTIONS)}",
            )
        selector = self.selector(name)
        if selector.window is not None:
            raise QueryError(
                "a range selector alone is not an instant value",
                f"wrap it: rate({selector.metric}[...]) or avg_over_time(...)",
            )
        return selector

    def selector(self, metric: str) -> Selector:
        matchers: list[Matcher] = []
        if self.peek() == ("op", "{"):
            self.pos += 1
            while self.peek() != ("op", "}"):
                label = self.take("name")
                token = self.peek()
                if token is None or token[1] not in ("=", "!=", "=~", "!~"):
                    raise QueryError(
                        f"label {label} has no matcher", f'write {label}="value" or {label}=~"re"'
                    )
                self.pos += 1
                raw = self.take("str")
                value = bytes(raw[1:-1], "utf-8").decode("unicode_escape")
                if token[1] in ("=~", "!~"):
                    try:
                        re.compile(value)
                    except re.error as exc:
                        raise QueryError(
                            f"label {label}: {value!r} is not a regular expression ({exc})",
                            "write an RE2-style regular expression",
                        ) from exc
                matchers.append(Matcher(label, token[1], value))
                if self.peek() == ("op", ","):
                    self.pos += 1
            self.take("op", "}")
        window = None
        if self.peek() == ("op", "["):
            self.pos += 1
            window = duration(self.take("dur"), "range")
            self.take("op", "]")
        return Selector(metric, tuple(matchers), window)


def parse(text: str) -> Expr:
    if not text.strip():
        raise QueryError("the query is empty", "send a metric name, e.g. DCGM_FI_DEV_GPU_UTIL")
    if len(text) > MAX_QUERY:
        raise QueryError(f"the query is longer than {MAX_QUERY} characters", "shorten it")
    parser = _Parser(text)
    found: Expr = parser.expr()
    token = parser.peek()
    if token is not None and (token[0] == "cmp" or token == ("op", "!=")):
        parser.pos += 1
        number = parser.peek()
        if number is None or number[0] != "num":
            raise QueryError(
                f"{token[1]} compares with a number",
                f"write e.g. DCGM_FI_DEV_XID_ERRORS {token[1]} 0",
            )
        parser.pos += 1
        found = Comparison(token[1], found, float(number[1]))
    if parser.peek() is not None:
        raise QueryError(
            f"unexpected {parser.peek()[1]!r} after the expression",  # type: ignore[index]
            "one expression per query",
        )
    return found


def selectors(expr: Expr) -> list[Selector]:
    if isinstance(expr, Selector):
        return [expr]
    if isinstance(expr, Function):
        return [expr.arg]
    return selectors(expr.arg)  # an aggregation's or a comparison's argument


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _seconds(window: float) -> str:
    return f"{int(window * 1000)}ms" if window != int(window) else f"{int(window)}s"


def render(expr: Expr, scope: Matcher | None = None) -> str:
    """The PromQL text of a parsed query, with `scope` added to every selector's matchers: how
    a query is confined to one cluster's series before a Prometheus server evaluates it (the
    caller's own matchers are kept; a series must match them and `scope`)."""
    if isinstance(expr, Selector):
        matchers = [*expr.matchers, *([scope] if scope is not None else [])]
        inner = ",".join(f"{m.label}{m.op}{_quote(m.value)}" for m in matchers)
        window = f"[{_seconds(expr.window)}]" if expr.window is not None else ""
        return f"{expr.metric}{{{inner}}}{window}" if inner else f"{expr.metric}{window}"
    if isinstance(expr, Function):
        return f"{expr.name}({render(expr.arg, scope)})"
    if isinstance(expr, Aggregation):
        grouping = f" {'without' if expr.without else 'by'} ({','.join(expr.labels)})"
        return f"{expr.op}{grouping if expr.labels or expr.without else ''} ({render(expr.arg, scope)})"
    return f"{render(expr.arg, scope)} {expr.op} {_number(expr.threshold)}"


# ---- evaluation ------------------------------------------------------------------------------


Selected = list[tuple[dict[str, str], Sequence[tuple[float, float]]]]


def _select(series: Series, selector: Selector, cache: dict[int, Selected] | None) -> Selected:
    """The series the selector matches, each with its samples as a list (bisected by time);
    `cache` keeps them for the other steps of a range query."""
    if cache is not None and id(selector) in cache:
        return cache[id(selector)]
    found: Selected = []
    for labels, samples in series.items():
        named = dict(labels)
        if named.get("__name__") != selector.metric:
            continue
        if all(m.matches(named) for m in selector.matchers):
            found.append((named, list(samples)))
    if cache is not None:
        cache[id(selector)] = found
    return found


def _span(samples: Sequence[tuple[float, float]], start: float, end: float) -> Sequence[Any]:
    """The samples in (start, end], found by bisection (samples are oldest first)."""
    low = bisect.bisect_right(samples, start, key=lambda s: s[0])
    high = bisect.bisect_right(samples, end, key=lambda s: s[0])
    return samples[low:high]


def _newest(samples: Sequence[tuple[float, float]], at: float) -> float | None:
    """The newest sample at or before `at` within the lookback, unless it is a staleness
    marker (NaN: the series ended)."""
    index = bisect.bisect_right(samples, at, key=lambda s: s[0])
    if not index:
        return None
    when, value = samples[index - 1]
    return value if when > at - LOOKBACK and not math.isnan(value) else None


def _timed(samples: Sequence[tuple[float, float]], start: float, end: float) -> list[Any]:
    return [(t, v) for t, v in _span(samples, start, end) if not math.isnan(v)]


def _range_value(name: str, samples: list[tuple[float, float]], window: float) -> float | None:
    if name in ("rate", "increase"):
        if len(samples) < 2:
            return None
        rise = 0.0
        for (_, before), (_, after) in itertools.pairwise(samples):
            rise += after - before if after >= before else after  # a counter reset
        if name == "increase":
            return rise
        spent = samples[-1][0] - samples[0][0]
        return rise / spent if spent > 0 else None
    values = [v for _, v in samples]
    if not values:
        return None
    pick: dict[str, Callable[[list[float]], float]] = {
        "avg_over_time": lambda v: sum(v) / len(v),
        "max_over_time": max,
        "min_over_time": min,
    }
    return pick[name](values)


def instant(
    expr: Expr, series: Series, at: float, cache: dict[int, Selected] | None = None
) -> list[tuple[dict[str, str], float]]:
    """The query's value at `at`: (labels, value) per resulting series."""
    if isinstance(expr, Selector):
        out = []
        for labels, samples in _select(series, expr, cache):
            value = _newest(samples, at)
            if value is not None:
                out.append((labels, value))
        return out
    if isinstance(expr, Function):
        window = expr.arg.window
        assert window is not None
        out = []
        for labels, samples in _select(series, expr.arg, cache):
            value = _range_value(expr.name, _timed(samples, at - window, at), window)
            if value is not None:
                kept = {k: v for k, v in labels.items() if k != "__name__"}
                out.append((kept, value))
        return out
    if isinstance(expr, Comparison):
        check = COMPARE[expr.op]
        return [(k, v) for k, v in instant(expr.arg, series, at, cache) if check(v, expr.threshold)]
    groups: dict[Labels, list[float]] = {}
    for labels, value in instant(expr.arg, series, at, cache):
        if expr.without:
            key = tuple(
                sorted(
                    (k, v) for k, v in labels.items() if k not in expr.labels and k != "__name__"
                )
            )
        else:
            key = tuple(sorted((k, v) for k, v in labels.items() if k in expr.labels))
        groups.setdefault(key, []).append(value)
    combine: dict[str, Callable[[list[float]], float]] = {
        "sum": sum,
        "avg": lambda v: sum(v) / len(v),
        "max": max,
        "min": min,
        "count": lambda v: float(len(v)),
    }
    return [(dict(key), combine[expr.op](values)) for key, values in sorted(groups.items())]


def _number(value: float) -> str:
    return f"{value:.6g}" if value != int(value) else str(int(value))


def vector(expr: Expr, series: Series, at: float) -> dict[str, Any]:
    return {
        "resultType": "vector",
        "result": [
            {"metric": labels, "value": [round(at, 3), _number(value)]}
            for labels, value in instant(expr, series, at)
        ],
    }


def matrix(expr: Expr, series: Series, start: float, end: float, step: float) -> dict[str, Any]:
    if step <= 0:
        raise QueryError("step must be positive", "send step like 15s")
    if end < start:
        raise QueryError("end is before start", "send start <= end")
    points = int((end - start) / step) + 1
    if points > MAX_POINTS:
        raise QueryError(
            f"the range has {points} points of step {step:g}s; at most {MAX_POINTS}",
            "widen step or narrow the range",
        )
    rows: dict[Labels, list[list[Any]]] = {}
    cache: dict[int, Selected] = {}
    for index in range(points):
        at = start + index * step
        for labels, value in instant(expr, series, at, cache):
            key = tuple(sorted(labels.items()))
            rows.setdefault(key, []).append([round(at, 3), _number(value)])
    return {
        "resultType": "matrix",
        "result": [{"metric": dict(key), "values": values} for key, values in sorted(rows.items())],
    }


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\d+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def exposition(text: str) -> list[tuple[Labels, float]]:
    """The samples of a Prometheus text-format answer (comments skipped; a line that is not a
    sample is skipped too, as Prometheus reports it and keeps the rest)."""
    out: list[tuple[Labels, float]] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        found = _SAMPLE.match(line.strip())
        if found is None:
            continue
        labels = [("__name__", found.group(1))]
        body = (found.group(2) or "{}")[1:-1]
        labels += [
            (m.group(1), m.group(2).replace('\\"', '"').replace("\\\\", "\\"))
            for m in _LABEL.finditer(body)
        ]
        try:
            value = float(found.group(3))
        except ValueError:
            continue
        out.append((tuple(sorted(labels)), value))
    return out
