-- Managed repositories (issue 11): a project created without a repo_url gets a bare
-- repository hosted by this service, served over smart HTTP at repo_url. The flag, not the
-- URL, says which backend serves a project: a remote URL may well point at another svc.
ALTER TABLE projects ADD COLUMN repo_managed boolean NOT NULL DEFAULT false;
