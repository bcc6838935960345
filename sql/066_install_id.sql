-- Issue 21 item 8: one id per install (per database), carried by every session sandbox as
-- the label `svc.install`, so that the orphan sweep of one install never removes another
-- install's sandboxes on a shared Docker engine or Kubernetes namespace.
CREATE TABLE install_identity (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  install_id uuid NOT NULL DEFAULT gen_random_uuid()
);
INSERT INTO install_identity DEFAULT VALUES;
