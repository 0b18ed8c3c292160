-- The audit log is the event log: every event is audited, so its audit row was a second copy of
-- the event's own row (the same id, operation, type, subject, principal, payload and time) plus
-- its source and when it was written. Those two become columns of `events`, `audit_log` becomes
-- a view of it, and `write_event` writes one row per event instead of two.
--
-- The event log takes over the audit log's guarantee: append-only (no UPDATE, DELETE or
-- TRUNCATE), enforced by a trigger as before. Every audit row was an event's (written by
-- write_event or, before migration 0009, by the audit subscriber from the event's envelope), so
-- the copy below carries every source and write time over before the table goes.
ALTER TABLE events ADD COLUMN source text, ADD COLUMN recorded_at timestamptz;
UPDATE events e SET source = a.source, recorded_at = a.recorded_at
FROM audit_log a WHERE a.event_id = e.event_id;
UPDATE events SET recorded_at = occurred_at WHERE recorded_at IS NULL;
ALTER TABLE events ALTER COLUMN recorded_at SET DEFAULT clock_timestamp(),
                   ALTER COLUMN recorded_at SET NOT NULL;

CREATE INDEX events_principal ON events (principal, seq);

DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();

CREATE FUNCTION event_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log (events, audit_log) is append-only';
END $$;
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE OR TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION event_log_append_only();

-- `seq` is the event's sequence number: an audit cursor (`GET /api/v1/audit?after=`) and an
-- event-stream cursor are now the same number.
CREATE VIEW audit_log AS
SELECT seq, event_id, operation_id, type, subject, principal, source, payload, occurred_at,
       recorded_at
FROM events;

-- The same arguments as before (0009): callers do not change.
CREATE OR REPLACE FUNCTION write_event(
    event_id uuid,
    operation_id uuid,
    type text,
    subject text,
    principal text,
    source text,
    occurred_at timestamptz,
    payload jsonb,
    body bytea,
    note text,
    wake_relay boolean DEFAULT true,
    notify_events boolean DEFAULT true
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    seq bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(76374810195059);  -- 0x4576656E7473, "Events"
    INSERT INTO events (event_id, operation_id, type, subject, principal, source, occurred_at,
                        payload)
    VALUES (write_event.event_id, write_event.operation_id, write_event.type,
            write_event.subject, write_event.principal, write_event.source,
            write_event.occurred_at, write_event.payload)
    RETURNING events.seq INTO seq;
    INSERT INTO outbox (subject, message_id, body)
    VALUES (write_event.subject, write_event.event_id, write_event.body);
    IF wake_relay THEN
        PERFORM pg_notify('outbox', current_setting('application_name'));
    END IF;
    IF notify_events THEN
        PERFORM pg_notify('events', seq::text || write_event.note);
    END IF;
    RETURN seq;
END $$;
