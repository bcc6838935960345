import { builder, toggle } from './toggle.js';
export { builder };
export const handler = toggle('disable');
