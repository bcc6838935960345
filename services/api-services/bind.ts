/**
 * `fn` with its first argument (the database, or a service's dependencies) given once:
 * the API then calls it with the caller's arguments only.
 */
export const bind =
  <D, A extends unknown[], R>(dep: D, fn: (dep: D, ...args: A) => R) =>
  (...args: A): R =>
    fn(dep, ...args);
