"""The node watcher's AWS spending decisions (cluster_svc/domain/nodes/watch_plan.py)."""

from __future__ import annotations

from cluster_svc.domain.nodes.health import NodeInstance
from cluster_svc.domain.nodes.watch_plan import (
    ClusterWatch,
    full_cost,
    idle_calls_per_hour,
    kubernetes_disagrees,
    next_step,
    only_resync_due,
    pages_for,
    read_in_full,
    saw_newest,
)


def nodes(n: int) -> list[NodeInstance]:
    return [NodeInstance(f"i-{i:017x}", "gpu", "ml.g5.2xlarge", "Running") for i in range(n)]


def test_a_full_read_first_then_the_event_check_until_an_event_or_the_resync() -> None:
    watch = ClusterWatch()
    assert next_step(watch, 0.0, 600.0) == "full"
    read_in_full(watch, 0.0, nodes(1000), "Automatic", "e1", frozenset({"i-1"}))
    assert (watch.pages, full_cost(watch)) == (10, 12)
    assert next_step(watch, 5.0, 600.0) == "events"
    assert not saw_newest(watch, "e1") and next_step(watch, 10.0, 600.0) == "events"
    assert saw_newest(watch, "e2") and next_step(watch, 15.0, 600.0) == "full"
    read_in_full(watch, 15.0, nodes(10), None, "e2")
    assert not watch.changed and next_step(watch, 614.0, 600.0) == "events"
    assert next_step(watch, 615.0, 600.0) == "full"


def test_an_empty_event_list_then_a_first_event_is_a_change() -> None:
    watch = ClusterWatch()
    read_in_full(watch, 0.0, nodes(3), None, None)
    assert not saw_newest(watch, None)
    assert saw_newest(watch, "first")


def test_a_cluster_without_events_is_polled_every_round() -> None:
    watch = ClusterWatch(events=False)
    read_in_full(watch, 0.0, nodes(3), None, None)
    assert next_step(watch, 1.0, 600.0) == "full"


def test_a_node_joining_or_leaving_kubernetes_is_a_change_a_node_never_joining_is_not() -> None:
    watch = ClusterWatch()
    assert not kubernetes_disagrees(watch, frozenset({"a"}))  # nothing read yet
    read_in_full(watch, 0.0, nodes(3), None, "e", frozenset({"a", "b"}))  # one never joined
    assert not kubernetes_disagrees(watch, frozenset({"a", "b"}))
    assert kubernetes_disagrees(watch, frozenset({"a"}))


def test_pages_and_the_idle_hour() -> None:
    assert [pages_for(n) for n in (0, 1, 100, 101, 1000)] == [1, 1, 1, 2, 10]
    # every 5 s a check, a full read of a 10-node cluster every 600 s: 732 calls, capped at 60
    assert idle_calls_per_hour(5.0, 600.0, 1, 1e9) == 714 + 6 * 3
    assert idle_calls_per_hour(5.0, 600.0, 10, 60.0) == 60.0
    # events flowing: a check every 300 s, a full read every 900 s
    assert idle_calls_per_hour(5.0, 900.0, 1, 1e9, quiet=300.0) == 8 + 4 * 3


def test_the_shipped_defaults_ask_an_idle_cluster_for_no_more_than_its_budgets() -> None:
    """The node and drift watchers' defaults are the fleet's AWS call budget: an idle cluster
    of up to 100 nodes whose events flow asks each watcher for no more than its budget (so
    the budget is a ceiling, not the cadence), and the two budgets with the event queue's
    long poll (a 20 s poll per region, shared by at least 50 clusters in the fleet bench) fit
    60 calls per cluster-hour."""
    from cluster_svc.adapters.aws_events import WAIT_SECONDS
    from cluster_svc.areas.drift import FORESEEN_CALLS, DriftSettings
    from cluster_svc.areas.nodes import WatchSettings
    from shared.config import shipped_defaults

    nodes_ = shipped_defaults(WatchSettings)
    drift = shipped_defaults(DriftSettings)
    asked = idle_calls_per_hour(
        nodes_["node_watch_seconds"],
        nodes_["node_watch_resync_seconds"],
        1,
        1e9,
        quiet=nodes_["node_watch_evented_seconds"],
    )
    assert asked <= nodes_["node_watch_aws_calls_per_cluster_hour"]
    drift_asked = FORESEEN_CALLS * 3600.0 / drift["drift_watch_seconds"]
    assert drift_asked <= drift["drift_aws_calls_per_cluster_hour"]
    queue = 3600.0 / WAIT_SECONDS / 50
    budgets = nodes_["node_watch_aws_calls_per_cluster_hour"]
    assert budgets + drift["drift_aws_calls_per_cluster_hour"] + queue <= 60.0


def test_a_node_in_flux_keeps_the_cluster_polled_until_it_settles() -> None:
    watch = ClusterWatch()
    moving = nodes(2)
    moving[1] = NodeInstance(moving[1].node_id, "gpu", "ml.g5.2xlarge", "ShuttingDown")
    read_in_full(watch, 0.0, moving, None, "e")
    assert next_step(watch, 5.0, 600.0) == "full"
    read_in_full(watch, 5.0, moving[:1], None, "e")
    assert next_step(watch, 10.0, 600.0) == "events"


def test_only_the_resync_is_due_when_nothing_says_the_cluster_changed() -> None:
    watch = ClusterWatch()
    assert not only_resync_due(watch)  # never read: a first read, not a resync
    read_in_full(watch, 0.0, nodes(3), None, "e")
    assert only_resync_due(watch)
    saw_newest(watch, "e2")
    assert not only_resync_due(watch)


def test_while_node_health_events_flow_a_settled_cluster_is_checked_only_every_quiet_seconds() -> (
    None
):
    watch = ClusterWatch()
    assert next_step(watch, 0.0, 600.0, quiet=60.0) == "full"  # never read: read now
    read_in_full(watch, 0.0, nodes(3), "Automatic", "e1")
    assert next_step(watch, 5.0, 600.0, quiet=60.0) == "quiet"
    assert next_step(watch, 60.0, 600.0, quiet=60.0) == "events"
    watch.checked_at = 60.0
    assert next_step(watch, 100.0, 600.0, quiet=60.0) == "quiet"
    assert next_step(watch, 100.0, 600.0) == "events"  # no events: every round, as before
    # an event, a node in flux or Kubernetes disagreeing still reads at once
    watch.changed = True
    assert next_step(watch, 101.0, 600.0, quiet=60.0) == "full"
    read_in_full(watch, 101.0, [*nodes(2), NodeInstance("i-9", "gpu", "g", "Pending")], None, "e2")
    assert next_step(watch, 102.0, 600.0, quiet=60.0) == "full"
    # a cluster keeping no HyperPod events is read in full, every quiet seconds
    read_in_full(watch, 110.0, nodes(3), None, None)
    watch.events = False
    assert next_step(watch, 111.0, 600.0, quiet=60.0) == "quiet"
    assert next_step(watch, 170.0, 600.0, quiet=60.0) == "full"
