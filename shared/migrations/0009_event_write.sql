-- One event write: every event (shared.operations.write_event_call) is recorded by this function.
--
-- Under the event-order lock (one per transaction, held to its commit: the sequence order is the
-- commit order), it appends the event to the log, queues its envelope for `evt.>` (the outbox),
-- records it in the audit log with its principal and source, and notifies the relay (its
-- writer's application_name) and the live stream (the sequence number and `note`) at commit.
-- `wake_relay` / `notify_events` false: the writer publishes or announces the event itself
-- after commit. Every event is audited; the audit row commits with the event (`recorded_at`:
-- when it was written, not the transaction's start, which may precede the event).
CREATE FUNCTION write_event(
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
    INSERT INTO events (event_id, operation_id, type, subject, principal, occurred_at, payload)
    VALUES (write_event.event_id, write_event.operation_id, write_event.type,
            write_event.subject, write_event.principal, write_event.occurred_at,
            write_event.payload)
    RETURNING events.seq INTO seq;
    INSERT INTO outbox (subject, message_id, body)
    VALUES (write_event.subject, write_event.event_id, write_event.body);
    INSERT INTO audit_log (event_id, operation_id, type, subject, principal, source, payload,
                           occurred_at, recorded_at)
    VALUES (write_event.event_id, write_event.operation_id, write_event.type,
            write_event.subject, write_event.principal, write_event.source,
            write_event.payload, write_event.occurred_at, clock_timestamp());
    IF wake_relay THEN
        PERFORM pg_notify('outbox', current_setting('application_name'));
    END IF;
    IF notify_events THEN
        PERFORM pg_notify('events', seq::text || write_event.note);
    END IF;
    RETURN seq;
END $$;

-- Events written before this function whose audit row the audit subscriber (which read them
-- back from `evt.>`) had not yet recorded: recorded now, with their source when their envelope
-- is still in the outbox.
INSERT INTO audit_log (event_id, operation_id, type, subject, principal, source, payload,
                       occurred_at)
SELECT e.event_id, e.operation_id, e.type, e.subject, e.principal,
       (SELECT convert_from(o.body, 'UTF8')::jsonb ->> 'source'
        FROM outbox o WHERE o.message_id = e.event_id LIMIT 1),
       e.payload, e.occurred_at
FROM events e
WHERE NOT EXISTS (SELECT FROM audit_log a WHERE a.event_id = e.event_id)
ORDER BY e.seq;
