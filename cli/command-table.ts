/**
 * The command tree, as data. Only the module of the command that runs is imported, so
 * adding a command costs the others nothing at startup. A command that is not built yet is
 * simply not listed here.
 */
import type { Argv } from 'yargs';
import type { Factory } from './factory.js';

export type Args = Record<string, unknown> & { _: Array<string | number> };

export interface CommandModule {
  /** Flags and positionals (yargs). */
  builder?(y: Argv): Argv;
  /** Turns parsed argv into the command's options and runs it. */
  handler(argv: Args, f: Factory): Promise<void>;
}

export interface LeafSpec {
  name: string;
  /** Positionals in yargs syntax: `<cr>`, `[<name>]` is written `[name]`. */
  args?: string;
  aliases?: string[];
  describe: string;
  /** Takes its words as-is, without yargs (`help`, `version`: answered fast). */
  raw?: boolean;
  load(): Promise<CommandModule>;
}

export interface GroupSpec {
  name: string;
  aliases?: string[];
  describe: string;
  children: LeafSpec[];
}

export type Spec = LeafSpec | GroupSpec;
export const isGroup = (s: Spec): s is GroupSpec => 'children' in s;

export interface Section {
  title: string;
  commands: Spec[];
}

export const SECTIONS: Section[] = [
  {
    title: 'Auth',
    commands: [
      { name: 'login', describe: 'Log in to a host (browser flow, or --token)', load: () => import('./commands/login.js') },
      { name: 'logout', describe: "Remove the stored token of the active or named host", load: () => import('./commands/logout.js') },
      { name: 'whoami', describe: 'Show the user and active account', load: () => import('./commands/whoami.js') },
      {
        name: 'auth',
        describe: 'Manage your tokens',
        children: [
          { name: 'token', args: '<action> [token]', describe: 'List (ls), create or revoke your tokens', load: () => import('./commands/auth/token.js') },
        ],
      },
    ],
  },
  {
    title: 'Hosts',
    commands: [
      {
        name: 'hosts',
        describe: 'Manage the API endpoints the CLI talks to',
        children: [
          { name: 'ls', aliases: ['list'], describe: 'List hosts; the active one is marked', load: () => import('./commands/hosts/ls.js') },
          { name: 'use', args: '[name]', describe: 'Make a host the active one', load: () => import('./commands/hosts/use.js') },
          { name: 'add', args: '<name>', describe: 'Add a host', load: () => import('./commands/hosts/add.js') },
          { name: 'rm', args: '<name>', aliases: ['remove'], describe: 'Remove a host', load: () => import('./commands/hosts/rm.js') },
          { name: 'info', args: '[name]', describe: 'Show a host (token masked)', load: () => import('./commands/hosts/info.js') },
          { name: 'current', describe: 'Print the host commands here will use', load: () => import('./commands/hosts/current.js') },
        ],
      },
    ],
  },
  {
    title: 'Projects',
    commands: [
      {
        name: 'projects',
        aliases: ['project'],
        describe: 'List, inspect and link projects',
        children: [
          { name: 'ls', aliases: ['list'], describe: 'List projects', load: () => import('./commands/projects/ls.js') },
          { name: 'info', args: '[project]', describe: 'Show a project (default: the linked one)', load: () => import('./commands/projects/info.js') },
          { name: 'link', args: '[project]', describe: 'Link this directory to a project (.svc/link.json)', load: () => import('./commands/projects/link.js') },
          { name: 'unlink', describe: 'Remove the link of this directory', load: () => import('./commands/projects/unlink.js') },
          { name: 'open', args: '[project]', describe: "Open a project's dashboard page", load: () => import('./commands/projects/open.js') },
        ],
      },
    ],
  },
  {
    title: 'Sessions',
    commands: [
      {
        name: 'sessions',
        aliases: ['session'],
        describe: 'Start, inspect and talk to agent sessions',
        children: [
          { name: 'ls', aliases: ['list'], describe: 'List sessions', load: () => import('./commands/sessions/ls.js') },
          { name: 'info', args: '<id>', aliases: ['show'], describe: 'Show a session (status, branch, base, agent, sandbox URL, errors)', load: () => import('./commands/sessions/info.js') },
          { name: 'new', aliases: ['create'], describe: 'Start a session and wait until it runs', load: () => import('./commands/sessions/new.js') },
          { name: 'restart', args: '<id>', describe: 'Re-provision a session in place', load: () => import('./commands/sessions/restart.js') },
          { name: 'rm', args: '<id>', aliases: ['remove', 'delete'], describe: 'Stop and delete a session', load: () => import('./commands/sessions/rm.js') },
          { name: 'open', args: '<id>', describe: "Open a session's dashboard page", load: () => import('./commands/sessions/open.js') },
          { name: 'chat', args: '[id]', aliases: ['talk'], describe: "Talk to a session's agent (interactive, or --prompt)", load: () => import('./commands/sessions/chat.js') },
          { name: 'preview', args: '<id> [port]', describe: 'Preview URL of a sandbox port (default 3000)', load: () => import('./commands/sessions/preview.js') },
        ],
      },
    ],
  },
  {
    title: 'Change requests',
    commands: [
      {
        name: 'cr',
        describe: 'Open, review and merge change requests',
        children: [
          { name: 'ls', aliases: ['list'], describe: 'List change requests', load: () => import('./commands/cr/ls.js') },
          { name: 'show', args: '<cr>', aliases: ['info', 'view'], describe: 'Show a change request and its merge preview', load: () => import('./commands/cr/show.js') },
          { name: 'diff', args: '<cr>', describe: 'Show the diff of a change request', load: () => import('./commands/cr/diff.js') },
          { name: 'open', aliases: ['new', 'create'], describe: 'Open a change request', load: () => import('./commands/cr/open.js') },
          { name: 'merge', args: '<cr>', describe: 'Merge an open change request', load: () => import('./commands/cr/merge.js') },
          { name: 'close', args: '<cr>', describe: 'Close an open change request', load: () => import('./commands/cr/close.js') },
          { name: 'reopen', args: '<cr>', describe: 'Reopen a closed change request', load: () => import('./commands/cr/reopen.js') },
        ],
      },
    ],
  },
  {
    title: 'Other',
    commands: [
      { name: 'version', raw: true, describe: 'Print the version', load: () => import('./commands/version.js') },
      { name: 'help', raw: true, args: '[command..]', describe: 'Show help for svc or a command', load: () => import('./commands/help.js') },
    ],
  },
];

export const TOP: Spec[] = SECTIONS.flatMap((s) => s.commands);

export function findSpec<T extends Spec>(list: T[], token: string): T | undefined {
  return list.find((s) => s.name === token || s.aliases?.includes(token));
}

/** Flags that take a value and may come before the command words (`svc --host x cr ls`). */
export const GLOBAL_VALUE_FLAGS = new Set(['--host', '--project']);

/** Positional usage as people read it: `[name]` -> `[<name>]`. */
export function displayArgs(args: string | undefined): string {
  if (!args) return '';
  return args.replace(/\[(\w+)(\.\.)?\]/g, (_, n: string, dots?: string) => `[<${n}>${dots ? '...' : ''}]`);
}
