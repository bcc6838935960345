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
          { name: 'create', args: '<name>', aliases: ['new'], describe: 'Create a project (a managed repository, or --repo-url)', load: () => import('./commands/projects/create.js') },
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
          { name: 'stop', args: '<id>', describe: 'Stop a session: its sandbox goes, its branch stays (restart brings it back)', load: () => import('./commands/sessions/stop.js') },
          { name: 'restart', args: '<id>', describe: 'Re-provision a session in place', load: () => import('./commands/sessions/restart.js') },
          { name: 'refresh', args: '<id>', describe: 'Re-pull the session branch and restart its agent, same sandbox', load: () => import('./commands/sessions/refresh.js') },
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
          { name: 'merge', args: '<cr>', describe: 'Merge an open change request (--when-green: once its checks pass; --stack: with those below it)', load: () => import('./commands/cr/merge.js') },
          { name: 'stack', args: '<cr>', describe: 'Show the stack of a change request: the ones below it and above it', load: () => import('./commands/cr/stack.js') },
          { name: 'checks', args: '<cr>', describe: "Show a change request's checks, statuses and merge-when-green", load: () => import('./commands/cr/checks.js') },
          { name: 'close', args: '<cr>', describe: 'Close an open change request', load: () => import('./commands/cr/close.js') },
          { name: 'reopen', args: '<cr>', describe: 'Reopen a closed change request', load: () => import('./commands/cr/reopen.js') },
          { name: 'comment', args: '<cr>', describe: 'Comment on a change request (--body; --path and --line for a line of the diff)', load: () => import('./commands/cr/comment.js') },
          { name: 'comments', args: '<cr>', describe: 'List the review comments of a change request', load: () => import('./commands/cr/comments.js') },
          { name: 'resolve', args: '<cr> <comment>', describe: 'Resolve a review comment (--unresolve to open it again)', load: () => import('./commands/cr/resolve.js') },
          { name: 'reviewed', args: '<cr>', describe: 'Mark a change request reviewed at its head', load: () => import('./commands/cr/reviewed.js') },
          { name: 'send-to-agent', args: '<cr>', describe: "Send the unresolved comments to the change request's session as one prompt", load: () => import('./commands/cr/send-to-agent.js') },
        ],
      },
    ],
  },
  {
    title: 'Insights',
    commands: [{ name: 'insights', describe: "What the project's agents delivered and what it cost (--group-by, --since 30d)", load: () => import('./commands/insights.js') }],
  },
  // --- ops ---
  {
    title: 'Channels',
    commands: [
      {
        name: 'channels',
        aliases: ['channel'],
        describe: 'Connect a chat workspace to a project',
        children: [
          { name: 'ls', aliases: ['list'], describe: "List the project's channels", load: () => import('./commands/channels/ls.js') },
          { name: 'add', args: '<kind>', describe: 'Connect a channel: add slack --webhook-url <url>', load: () => import('./commands/channels/add.js') },
          { name: 'rm', args: '<channel>', aliases: ['remove'], describe: 'Disconnect a channel', load: () => import('./commands/channels/rm.js') },
        ],
      },
    ],
  },
  {
    title: 'Budgets',
    commands: [
      {
        name: 'budget',
        args: '<action> [limit]',
        describe: "Show or set the project's (--account: your account's) model budget: set <limit>|none --per day|month",
        load: () => import('./commands/budget.js'),
      },
    ],
  },
  {
    title: 'Self-host',
    commands: [
      {
        name: 'self-host',
        aliases: ['selfhost'],
        describe: 'Run svc on this machine under docker/podman compose',
        children: [
          { name: 'start', describe: 'Create the config if needed, start the stack, log in to host selfhost', load: () => import('./commands/selfhost/start.js') },
          { name: 'configure', describe: 'Create the config and choose optional integrations', load: () => import('./commands/selfhost/configure.js') },
          { name: 'env', args: '<action> [pairs..]', describe: 'env ls (secrets masked) | env set KEY=VALUE ...', load: () => import('./commands/selfhost/env.js') },
          { name: 'logs', args: '[service]', describe: 'Follow the logs of one service or all', load: () => import('./commands/selfhost/logs.js') },
          { name: 'stop', describe: 'Stop the stack; the data is kept', load: () => import('./commands/selfhost/stop.js') },
        ],
      },
    ],
  },
  {
    title: 'Install',
    commands: [
      { name: 'update', describe: 'Update the CLI (re-runs the install)', load: () => import('./commands/maintenance/update.js') },
      { name: 'uninstall', describe: 'Remove the CLI, its shim, ~/.svc and the stored tokens', load: () => import('./commands/maintenance/uninstall.js') },
    ],
  },
  // --- end ops ---
  {
    title: 'Scaffold',
    commands: [
      { name: 'init', args: '[name]', describe: 'Scaffold svc.toml, .svc/ and the agent skill here (or in a new dir <name>)', load: () => import('./commands/init.js') },
      { name: 'ship', aliases: ['deploy'], describe: 'Push this repo to its svc project (created on first run) and open a CR', load: () => import('./commands/ship.js') },
    ],
  },
  {
    title: 'Secrets, env, triggers, apps',
    commands: [
      {
        name: 'secrets',
        describe: "Manage the project's secrets (values are never shown)",
        children: [
          { name: 'ls', aliases: ['list'], describe: 'List secret names and the manifest [env] spec; missing ones marked', load: () => import('./commands/secrets/ls.js') },
          { name: 'set', args: '<assignments..>', describe: 'Set secrets: NAME=VALUE ... (NAME=- reads stdin)', load: () => import('./commands/secrets/set.js') },
          { name: 'unset', args: '<names..>', aliases: ['rm'], describe: 'Remove secrets', load: () => import('./commands/secrets/unset.js') },
        ],
      },
      {
        name: 'env',
        describe: 'Move secrets to and from dotenv files',
        children: [
          { name: 'pull', describe: 'Write a .env skeleton: names only, values blank', load: () => import('./commands/env/pull.js') },
          { name: 'push', describe: 'Upload NAME=VALUE lines of a dotenv file as secrets', load: () => import('./commands/env/push.js') },
        ],
      },
      {
        name: 'triggers',
        aliases: ['trigger'],
        describe: 'Scheduled sessions from [[triggers]] in svc.toml',
        children: [
          { name: 'ls', aliases: ['list'], describe: 'List triggers with last_fired_at', load: () => import('./commands/triggers/ls.js') },
          { name: 'info', args: '<slug>', aliases: ['show'], describe: 'Show a trigger and its recent fires', load: () => import('./commands/triggers/info.js') },
          { name: 'fire', args: '<slug>', describe: 'Fire a trigger now', load: () => import('./commands/triggers/fire.js') },
          { name: 'enable', args: '<slug>', describe: 'Open a CR setting enabled = true', load: () => import('./commands/triggers/enable.js') },
          { name: 'disable', args: '<slug>', describe: 'Open a CR setting enabled = false', load: () => import('./commands/triggers/disable.js') },
        ],
      },
      {
        name: 'queue',
        describe: 'The merge queue of a base branch ([merge_queue] in svc.toml)',
        children: [
          { name: 'ls', aliases: ['list'], describe: 'List the queue in order: state, speculative result, checks; who left and why', load: () => import('./commands/queue/ls.js') },
          { name: 'rm', args: '<cr>', aliases: ['remove'], describe: 'Take a change request out of the queue', load: () => import('./commands/queue/rm.js') },
        ],
      },
      {
        name: 'apps',
        aliases: ['app'],
        describe: 'Apps deployed from [[apps]] in svc.toml',
        children: [
          { name: 'ls', aliases: ['list'], describe: 'List apps, their status and URL', load: () => import('./commands/apps/ls.js') },
          { name: 'info', args: '<name>', aliases: ['show'], describe: 'Show an app and its recent deploys', load: () => import('./commands/apps/info.js') },
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
