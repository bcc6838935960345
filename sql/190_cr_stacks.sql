-- Stacked change requests: the open CR a CR was stacked on (its base is that CR's head),
-- folded from its stream like every other column. No foreign key: a rebuild writes rows
-- in any order, and a parent goes only with its project (which takes both).
ALTER TABLE change_requests ADD COLUMN parent_cr_id uuid;
CREATE INDEX change_requests_parent ON change_requests (parent_cr_id) WHERE parent_cr_id IS NOT NULL;
