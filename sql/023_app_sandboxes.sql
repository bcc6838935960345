-- Issue 12: an app version runs in a sandbox of the server's provider. `sandbox` is the
-- provider's handle of the version serving the app's URL (`pid` is no longer written).
ALTER TABLE apps ADD COLUMN sandbox jsonb;
