-- The live feed watches the events sequence instead (api/feed-hub.ts): a NOTIFY per
-- append serialised every committing writer on a cluster-wide lock, costing about a third
-- of append throughput for a feature that is idle most of the time.
DROP TRIGGER events_notify ON events;
DROP FUNCTION events_notify();
