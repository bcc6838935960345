/**
 * The wire contracts: one zod schema per type the API exchanges, the TS types inferred from
 * them. The routes validate requests with these, `api/openapi.ts` builds the OpenAPI
 * document from them, and the CLI types its calls with them (types only: the CLI does not
 * validate a server's answers, so a newer server's extra field never breaks it).
 */
export * from './common.js';
export * from './accounts.js';
export * from './budgets.js';
export * from './projects.js';
export * from './change-requests.js';
export * from './events.js';
export * from './sessions.js';
export * from './manifest.js';
export * from './channels.js';
export * from './health.js';
export * from './review.js';
export * from './checks.js';
export * from './cost.js';
export * from './insights.js';
export * from './merge-queue.js';
