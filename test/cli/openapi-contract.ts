/** The CLI's fixtures use the shared checker of exchanges against the OpenAPI document. */
export { contractProblems } from '../support/openapi-check.js';
