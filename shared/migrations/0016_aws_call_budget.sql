-- The AWS call budget (shared/aws_budget.py): token buckets every service replica spends from,
-- one row per key, each changed by one atomic upsert.
--   aws:<account>:<region>        the account's calls in a region, every AWS call path (the
--                                 rate that keeps a fleet under SageMaker's and EKS's throttles)
--   watch:<watcher>:<cluster>     a watcher's declared calls per cluster per hour
-- `tokens` may go below zero: a caller takes its token at once and waits until the bucket has
-- refilled to it (the debt), so concurrent callers queue in the order PostgreSQL served them.

CREATE TABLE aws_call_buckets (
    key                text PRIMARY KEY,
    capacity           double precision NOT NULL CHECK (capacity > 0),
    refill_per_second  double precision NOT NULL CHECK (refill_per_second > 0),
    tokens             double precision NOT NULL,
    updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    calls              bigint NOT NULL DEFAULT 0,   -- tokens taken since the row was made
    throttled          bigint NOT NULL DEFAULT 0    -- throttling answers reported against it
);

-- Fleet scale: the reads of nodes and jobs a page at a time, in the order the lists show them.
-- The node list reads (cluster, instance_group, node_id) order; the job list (cluster,
-- created_at, name) order; both used to sort every row of the cluster first.
CREATE INDEX cluster_nodes_listed ON cluster_nodes (cluster, instance_group, node_id);
CREATE INDEX jobs_listed ON jobs (cluster, created_at, name);
