-- Live feeds wake on NOTIFY instead of polling: every statement that appends events
-- notifies `svc_events` once per project it touched, with the project id as payload.
-- A trigger (not the append code) so that no writer can forget it. NOTIFY is delivered
-- at commit and only then, so a listener never hears of an event it cannot read yet
-- (it may still have to wait for older transactions: the feed's read is commit-safe).
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_events', p.project_id::text)
  FROM (SELECT DISTINCT project_id FROM inserted WHERE project_id IS NOT NULL) AS p;
  RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
  REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
