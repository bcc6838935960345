export { reviewedBuilder as builder, reviewedHandler as handler } from './review-actions.js';
