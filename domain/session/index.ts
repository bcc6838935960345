export * from './commands.js';
export * from './decide.js';
export * from './events.js';
export * from './evolve.js';
export * from './state.js';
export * from './decider.js';
