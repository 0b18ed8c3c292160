-- Drift: the differences cluster-svc's drift watcher found between a cluster's record and its
-- actual state (one row per field, until the values agree again), and when each cluster was
-- last observed with the AWS calls that observation made (the watcher's call budget).

CREATE TABLE cluster_drift (
    cluster     text NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    field       text NOT NULL,   -- instance_groups.<group>.count, components.<name>, ...
    recorded    jsonb,
    actual      jsonb,
    detected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, field)
);

CREATE TABLE cluster_drift_watch (
    cluster     text PRIMARY KEY REFERENCES clusters (name) ON DELETE CASCADE,
    observed_at timestamptz NOT NULL,
    aws_calls   integer NOT NULL,   -- made by the last observation
    passes      bigint NOT NULL DEFAULT 1,
    calls_total bigint NOT NULL DEFAULT 0
);
