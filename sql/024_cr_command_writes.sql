-- Issue 16: less work per CR command. Every close, reopen or edit rewrote the CR row
-- with a new index entry in each of its indexes (a status change is never a HOT update);
-- two of them serve no query: CRs are never read by account, and every read by project
-- goes through (project_id, number) or (project_id, status), of which (project_id) alone
-- is a prefix.
DROP INDEX change_requests_account;
DROP INDEX change_requests_project;
