-- The operation store, the bus tables (outbox, inbox), the event log, audit and tokens.

CREATE TABLE operations (
    id              uuid PRIMARY KEY,
    kind            text NOT NULL,                 -- e.g. storage.create
    domain          text NOT NULL,                 -- cluster | storage | workload | inference
    target_type     text NOT NULL,
    target_id       text NOT NULL,
    request         jsonb NOT NULL,                -- the requested change, as submitted
    command_type    text NOT NULL,                 -- the command model that carries it
    command         jsonb NOT NULL,                -- the command payload, re-sent on retry
    principal       text NOT NULL,
    source          text NOT NULL DEFAULT 'rest',  -- ui | rest | mcp | cli
    idempotency_key text,
    request_hash    text NOT NULL,
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled', 'noop')),
    attempt         integer NOT NULL DEFAULT 1,
    error           jsonb,
    result          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    UNIQUE (principal, idempotency_key)
);
CREATE INDEX operations_created ON operations (created_at DESC);
CREATE INDEX operations_target ON operations (target_type, target_id);

CREATE TABLE stages (
    operation_id uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    name         text NOT NULL,
    position     integer NOT NULL,
    title        text NOT NULL,
    needs        text[] NOT NULL DEFAULT '{}',
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'running', 'submitted', 'succeeded', 'failed', 'cancelled', 'noop')),
    attempts     integer NOT NULL DEFAULT 0,
    external_id  text,
    outputs      jsonb NOT NULL DEFAULT '{}',
    progress     text,
    error        jsonb,
    started_at   timestamptz,
    finished_at  timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, name)
);

-- Append-only and totally ordered: writers take one advisory lock per transaction, so the
-- sequence order is the commit order and a reader resuming `after=seq` never skips a row.
CREATE TABLE events (
    seq          bigserial PRIMARY KEY,
    event_id     uuid NOT NULL UNIQUE,
    operation_id uuid,
    type         text NOT NULL,
    subject      text NOT NULL,
    principal    text NOT NULL,
    occurred_at  timestamptz NOT NULL,
    payload      jsonb NOT NULL
);
CREATE INDEX events_operation ON events (operation_id, seq);

CREATE TABLE outbox (
    id          bigserial PRIMARY KEY,
    subject     text NOT NULL,
    message_id  uuid NOT NULL,
    body        bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE inbox (
    consumer     text NOT NULL,
    message_id   uuid NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);

CREATE TABLE audit_log (
    seq          bigserial PRIMARY KEY,
    event_id     uuid NOT NULL UNIQUE,
    operation_id uuid,
    type         text NOT NULL,
    subject      text NOT NULL,
    principal    text NOT NULL,
    source       text,
    payload      jsonb NOT NULL,
    occurred_at  timestamptz NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_operation ON audit_log (operation_id);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END $$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

CREATE TABLE api_tokens (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    token_hash  text NOT NULL UNIQUE,            -- sha256 of the token; the token itself is never stored
    role        text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- Read model: storage buckets.
CREATE TABLE storage_buckets (
    name          text PRIMARY KEY,
    region        text NOT NULL,
    status        text NOT NULL,                  -- creating | available | deleting | deleted | failed
    arn           text,
    operation_id  uuid,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
