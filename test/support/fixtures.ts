/**
 * Mocha global fixtures, loaded in the main process before any worker starts.
 * (Filled in with the shared embedded PostgreSQL cluster by the foundation work.)
 */
export async function mochaGlobalSetup(): Promise<void> {}
export async function mochaGlobalTeardown(): Promise<void> {}
