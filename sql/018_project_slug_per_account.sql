-- Project slugs are unique per account, not across the server (issue 15 item 11): tenants
-- no longer take each other's names, and a slug is resolved within the caller's accounts.
ALTER TABLE projects DROP CONSTRAINT IF EXISTS projects_slug_key;
ALTER TABLE projects ADD CONSTRAINT projects_account_slug_key UNIQUE (account_id, slug);
