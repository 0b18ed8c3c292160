-- A cancel request is recorded on the operation; the stage engine honours it between steps.
ALTER TABLE operations ADD COLUMN cancel_requested_at timestamptz;
