/** The real dependencies of a `svc` process. */
import { homedir } from 'node:os';
import { configPath } from './config.js';
import type { Factory } from './factory.js';
import { nodeFetch } from './http.js';
import { systemIO } from './iostreams.js';
import { linePrompter } from './prompt.js';

export function systemFactory(version: string): Factory {
  const io = systemIO();
  return {
    io,
    env: process.env,
    cwd: process.cwd(),
    fetch: nodeFetch,
    configPath: configPath(process.env, homedir()),
    version,
    openBrowser: async (url) => (await import('./browser.js')).openBrowser(url, process.env),
    prompter: linePrompter(io),
    now: () => new Date(),
    onInterrupt(fn) {
      process.on('SIGINT', fn);
      return () => process.off('SIGINT', fn);
    },
  };
}
