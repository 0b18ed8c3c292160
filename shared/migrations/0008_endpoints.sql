-- Read model of inference endpoints, written by inference-svc: what was deployed (the spec as
-- requested), the Kubernetes objects it rendered to, and the status watcher's last observation.

CREATE TABLE endpoints (
    cluster         text NOT NULL,
    name            text NOT NULL,
    namespace       text NOT NULL DEFAULT 'default',
    kind            text NOT NULL,   -- container | sglang | managed | jumpstart
    spec            jsonb NOT NULL,
    objects         jsonb NOT NULL DEFAULT '[]',   -- [{api_version, kind, name}]
    status          text NOT NULL,   -- deploying | available | degraded | failed | deleting
    replicas        integer NOT NULL DEFAULT 0,
    ready_replicas  integer NOT NULL DEFAULT 0,
    address         text,            -- the external load balancer hostname, when there is one
    message         text,
    operation_id    uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, name)
);
