/**
 * The one narrow database interface. Every statement is a `Query` built by a function in
 * `sql/queries/`; callers never hold SQL strings, and every value is a bound parameter.
 */
export interface Query {
  text: string;
  values: unknown[];
  /**
   * Set on hot statements: pg prepares a named statement once per connection, so
   * Postgres stops parsing and planning it on every call. One name, one text.
   */
  name?: string;
}
