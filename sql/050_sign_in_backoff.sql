-- Password sign-in backs off per (email, client) instead of locking an email for everyone
-- (issue 20 item 8): failures are read by client, then email.
CREATE INDEX sign_in_failures_client_email ON sign_in_failures (client, email, failed_at);
