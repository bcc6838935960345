export { resolveBuilder as builder, resolveHandler as handler } from './review-actions.js';
