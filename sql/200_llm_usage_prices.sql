-- What each model call was charged at (docs/models.md "Cost"): the prices in force when it
-- was recorded, per million tokens in one named currency, so a later price change rewrites
-- nothing. NULL prices: a model without a price, counted in tokens and flagged. `cost` is
-- derived from the row itself (NULL when unpriced) so every reader sums one column.
ALTER TABLE llm_usage
  ADD COLUMN input_price_per_mtok  numeric CHECK (input_price_per_mtok >= 0),
  ADD COLUMN output_price_per_mtok numeric CHECK (output_price_per_mtok >= 0),
  ADD COLUMN currency text,
  ADD COLUMN cost numeric GENERATED ALWAYS AS ((input_tokens * input_price_per_mtok + output_tokens * output_price_per_mtok) / 1000000) STORED;
CREATE INDEX llm_usage_project_time ON llm_usage (project_id, created_at);
