export { builder } from './state.js';
import { handlerFor } from './state.js';

export const handler = handlerFor('close');
