import pytest

from shared.stages import Done, Stage, StageContext, Workflow


async def _noop(ctx: StageContext) -> Done:
    return Done()


def _wf(*stages: Stage) -> Workflow:
    return Workflow(kind="test.run", domain="test", stages=stages)


def test_topological_order_respects_needs() -> None:
    wf = _wf(
        Stage("hyperpod", "h", _noop, needs=("eks", "vpc")),
        Stage("eks", "e", _noop, needs=("vpc", "iam")),
        Stage("vpc", "v", _noop),
        Stage("iam", "i", _noop),
    )
    order = wf.topological_order()
    assert order.index("vpc") < order.index("eks") < order.index("hyperpod")
    assert order.index("iam") < order.index("eks")


def test_cycle_is_rejected() -> None:
    with pytest.raises(ValueError, match="cycle"):
        _wf(Stage("a", "a", _noop, needs=("b",)), Stage("b", "b", _noop, needs=("a",)))


def test_unknown_need_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown"):
        _wf(Stage("a", "a", _noop, needs=("ghost",)))


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        _wf(Stage("a", "a", _noop), Stage("a", "a", _noop))


def test_critical_path_is_the_longest_dependent_chain() -> None:
    wf = _wf(
        Stage("vpc", "v", _noop),
        Stage("iam", "i", _noop),
        Stage("eks", "e", _noop, needs=("vpc", "iam")),
        Stage("bucket", "b", _noop),
        Stage("hyperpod", "h", _noop, needs=("eks", "bucket")),
    )
    durations = {"vpc": 3, "iam": 1, "eks": 10, "bucket": 2, "hyperpod": 15}
    assert wf.critical_path(durations) == 28  # vpc -> eks -> hyperpod
