-- Issue 16: less work per CR command. Every close, reopen or edit rewrote the CR row
-- with a new index entry in each of its indexes (a status change is never a HOT update);
-- two of them serve no query: CRs are never read by account, and every read by project
-- goes through (project_id, number) or (project_id, status), of which (project_id) alone
-- is a prefix.
DROP INDEX change_requests_account;
DROP INDEX change_requests_project;

-- Every statement that inserts events moves the event's stream in the same statement and
-- inserts only the events whose stream moved (sql/queries/events.ts, change-requests.ts):
-- an event without its stream cannot be written. The foreign key re-checked that with a
-- trigger and a row lock per event (a sixth of the work of a CR command's statement).
ALTER TABLE events DROP CONSTRAINT events_stream_id_fkey;
