"""PromQL-lite: parsing (and its refusals) and evaluation over samples, as Prometheus does."""

from __future__ import annotations

import pytest

from shared.promql import (
    Aggregation,
    Function,
    Matcher,
    QueryError,
    Selector,
    exposition,
    instant,
    matrix,
    parse,
    render,
    vector,
)


def _series() -> dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]:
    series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
    for node, util in (("a", 90.0), ("b", 10.0)):
        for gpu in ("0", "1"):
            key = tuple(
                sorted({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": node, "gpu": gpu}.items())
            )
            series[key] = [(t, util + int(gpu)) for t in (100.0, 110.0, 120.0)]
    key = (("__name__", "node_amazonefa_tx_bytes"), ("device", "rdmap16s27"))
    series[key] = [(100.0, 0.0), (110.0, 1000.0), (120.0, 500.0)]  # a reset at 120
    return series


def test_parse_shapes() -> None:
    expr = parse('avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL{gpu=~"0|1", Hostname!="c"})')
    assert isinstance(expr, Aggregation) and expr.labels == ("Hostname",)
    assert isinstance(expr.arg, Selector) and len(expr.arg.matchers) == 2
    rate = parse("sum(rate(node_amazonefa_tx_bytes[5m])) by (device)")
    assert isinstance(rate, Aggregation) and rate.labels == ("device",)
    assert isinstance(rate.arg, Function) and rate.arg.arg.window == 300


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("", "empty"),
        ("rate(x)", "range selector"),
        ("x[5m]", "range selector alone"),
        ('x{gpu~"0"}', "unexpected character"),
        ("abs(x)", "not supported"),
        ('x{gpu=~"("}', "regular expression"),
        ("x y", "after the expression"),
        ("avg(x", "expected ')'"),
        ("x > y", "compares with a number"),
    ],
)
def test_refusals_say_what_is_wrong(query: str, words: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse(query)
    assert words in caught.value.message and caught.value.hint


def test_instant_aggregation_and_rate() -> None:
    series = _series()
    found = dict(
        (row["metric"]["Hostname"], row["value"][1])
        for row in vector(parse("avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)"), series, 125.0)[
            "result"
        ]
    )
    assert found == {"a": "90.5", "b": "10.5"}
    only = instant(parse('DCGM_FI_DEV_GPU_UTIL{Hostname="a",gpu="1"}'), series, 125.0)
    assert [v for _, v in only] == [91.0]
    # (1000 - 0) + 500 after the reset, over 20 s
    rate = instant(parse("rate(node_amazonefa_tx_bytes[1m])"), series, 125.0)
    assert rate == [({"device": "rdmap16s27"}, 75.0)]
    assert instant(parse("DCGM_FI_DEV_GPU_UTIL"), series, 1000.0) == []  # past the lookback
    ended = next(k for k in series if ("Hostname", "b") in k)
    series[ended].append((121.0, float("nan")))  # a staleness marker: the series ended
    assert len(instant(parse('DCGM_FI_DEV_GPU_UTIL{Hostname="b"}'), series, 125.0)) == 1
    series[ended].pop()
    hot = instant(parse("max by (Hostname) (DCGM_FI_DEV_GPU_UTIL) > 50"), series, 125.0)
    assert hot == [({"Hostname": "a"}, 91.0)]
    assert len(instant(parse('DCGM_FI_DEV_GPU_UTIL{Hostname="b"} != 10'), series, 125.0)) == 1


def test_range_query_and_its_limits() -> None:
    answer = matrix(parse('max(DCGM_FI_DEV_GPU_UTIL{Hostname="b"})'), _series(), 100, 120, 10)
    assert answer["result"] == [{"metric": {}, "values": [[100, "11"], [110, "11"], [120, "11"]]}]
    with pytest.raises(QueryError, match="at most"):
        matrix(parse("DCGM_FI_DEV_GPU_UTIL"), _series(), 0, 100_000, 1)


def test_exposition() -> None:
    text = (
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
        '# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu="0",modelName="A \\"x\\""} 93\n'
        "garbage line here\nnode_amazonefa_rx_bytes 1.5e+06\n"
    )
    assert exposition(text) == [
        ((("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("gpu", "0"), ("modelName", 'A "x"')), 93.0),
        ((("__name__", "node_amazonefa_rx_bytes"),), 1.5e6),
    ]


@pytest.mark.parametrize(
    ("query", "scoped"),
    [
        ("DCGM_FI_DEV_GPU_UTIL", 'DCGM_FI_DEV_GPU_UTIL{cluster="a"}'),
        (
            'avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL{pod=~"job-.*"})',
            'avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL{pod=~"job-.*",cluster="a"})',
        ),
        ('rate(x{a!="b\\"c"}[5m]) > 0.5', 'rate(x{a!="b\\"c",cluster="a"}[300s]) > 0.5'),
        (
            "sum without (gpu) (max_over_time(y[90s]))",
            'sum without (gpu) (max_over_time(y{cluster="a"}[90s]))',
        ),
        ('count(z{d=~"\\\\d+"})', 'count (z{d=~"\\\\d+",cluster="a"})'),
    ],
)
def test_render_adds_the_scope_to_every_selector_and_parses_back(query: str, scoped: str) -> None:
    expr = parse(query)
    assert render(expr, Matcher("cluster", "=", "a")) == scoped
    assert parse(render(expr)) == expr  # without a scope: the same query
    assert parse(scoped) != expr
