export * from './commands.js';
export * from './decide.js';
export * from './events.js';
export * from './evolve.js';
export * from './state.js';
export * from './views.js';
export * from './review.js';
export * from './diff-lines.js';
