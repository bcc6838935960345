-- Apps on their own origin, served by the API: `target` is where the server reaches the
-- version serving the app (the sandbox's socket, `unix:<path>`, or a loopback port on the
-- host's network); null until a version is live (an app deployed before this has none and
-- is deployed again when a worker starts). A preview code with port 0 lets its bearer into
-- an app (session_id `app:<name>`) instead of a session's port.
ALTER TABLE apps ADD COLUMN target text;
ALTER TABLE preview_codes DROP CONSTRAINT IF EXISTS preview_codes_port_check;
ALTER TABLE preview_codes ADD CONSTRAINT preview_codes_port_check CHECK (port BETWEEN 0 AND 65535);
