-- Read model of clusters: what exists, what we created (for a delete that touches nothing else),
-- the active cluster, instance groups and dependency components.

CREATE TABLE clusters (
    name                 text PRIMARY KEY,
    region               text NOT NULL,
    status               text NOT NULL,   -- creating | active | failed | deleting | imported
    managed              boolean NOT NULL, -- created by Hyperpilot (false: imported)
    spec                 jsonb NOT NULL DEFAULT '{}',
    eks_cluster_arn      text,
    hyperpod_cluster_arn text,
    endpoint             text,
    ca_data              text,
    oidc_issuer          text,
    resources            jsonb NOT NULL DEFAULT '{}',  -- stage outputs of the create operation
    operation_id         uuid,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE active_cluster (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    name      text REFERENCES clusters (name) ON DELETE SET NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE instance_groups (
    cluster        text NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    name           text NOT NULL,
    instance_type  text NOT NULL,
    count          integer NOT NULL,
    spec           jsonb NOT NULL,
    status         text NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, name)
);

CREATE TABLE cluster_components (
    cluster    text NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    component  text NOT NULL,
    version    text NOT NULL,
    status     text NOT NULL,   -- installed | upgraded | unchanged | failed
    message    text,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, component)
);
