export { sendBuilder as builder, sendHandler as handler } from './review-actions.js';
