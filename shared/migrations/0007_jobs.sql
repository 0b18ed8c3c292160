-- Read model of training jobs (and model downloads), written by workload-svc: what was
-- submitted, the custom resource it rendered to, and the status watcher's last observation
-- (phase, restarts used against the budget, faulty pods).

CREATE TABLE jobs (
    cluster        text NOT NULL,
    name           text NOT NULL,
    recipe         text NOT NULL,   -- pytorch | llama-factory | ms-swift | verl | model-download
    api_version    text NOT NULL,
    kind           text NOT NULL,   -- HyperPodPyTorchJob | RayJob | Job
    namespace      text NOT NULL DEFAULT 'default',
    spec           jsonb NOT NULL,
    status         text NOT NULL,   -- submitting | pending | running | restarting | succeeded | failed | cancelled
    restarts       integer NOT NULL DEFAULT 0,
    budget         integer,
    faulty_pods    jsonb NOT NULL DEFAULT '[]',
    pods           jsonb NOT NULL DEFAULT '[]',
    reason         text,
    message        text,
    operation_id   uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, name)
);

CREATE INDEX jobs_active ON jobs (status) WHERE status NOT IN ('succeeded', 'failed', 'cancelled');
