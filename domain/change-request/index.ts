export * from './commands.js';
export * from './decide.js';
export * from './events.js';
export * from './evolve.js';
export * from './state.js';
export * from './views.js';
export * from './check-events.js';
export * from './checks.js';
