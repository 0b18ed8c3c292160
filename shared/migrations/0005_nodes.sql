-- Read model of HyperPod nodes, written by cluster-svc's node watcher: the last observation of
-- every node of each active managed cluster (instance status + Kubernetes health, joined), and
-- when each cluster was last observed (the first observation is the baseline: no events).

CREATE TABLE cluster_nodes (
    cluster          text NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    node_id          text NOT NULL,
    logical_id       text,
    instance_group   text NOT NULL,
    instance_type    text,
    instance_status  text NOT NULL,   -- Running | Failure | Pending | ShuttingDown | ...
    health           text NOT NULL,   -- healthy | degraded | unhealthy | busy | unregistered
    view             jsonb NOT NULL,  -- the joined health view, as GET .../nodes shows it
    first_seen_at    timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, node_id)
);

CREATE TABLE cluster_node_watch (
    cluster      text PRIMARY KEY REFERENCES clusters (name) ON DELETE CASCADE,
    observed_at  timestamptz NOT NULL DEFAULT now()
);
