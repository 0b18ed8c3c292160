-- Storage claims of a cluster beyond its own bucket (`s3-claim`, recorded by the create in
-- clusters.resources): S3 buckets and FSx for Lustre file systems attached or created for a
-- claim. `source` says whether Hyperpilot made the bucket or file system (deleted with the
-- claim or the cluster) or found it (never deleted).

CREATE TABLE cluster_storage (
    cluster        text NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    claim          text NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('s3', 'fsx')),
    source         text NOT NULL CHECK (source IN ('existing', 'created')),
    status         text NOT NULL,   -- adding | available | removing | failed
    bucket         text,
    file_system_id text,
    volume         text,            -- the PersistentVolume's name
    details        jsonb NOT NULL DEFAULT '{}',
    operation_id   uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, claim)
);
