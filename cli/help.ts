/** Help text built from the command table: no yargs, no command module loaded. */
import { SECTIONS, displayArgs, isGroup, type GroupSpec, type LeafSpec } from './command-table.js';

const pad = (rows: Array<[string, string]>) => {
  const w = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`.trimEnd()).join('\n');
};

const leafUsage = (prefix: string, l: LeafSpec) => [prefix, l.name, displayArgs(l.args)].filter(Boolean).join(' ');

export function treeHelp(): string {
  const out: string[] = [
    'Work with change requests, projects and hosts of an svc service from the command line.',
    '',
    'USAGE',
    '  svc <command> [<subcommand>] [flags]',
  ];
  for (const section of SECTIONS) {
    out.push('', section.title.toUpperCase());
    const rows: Array<[string, string]> = [];
    for (const c of section.commands) {
      if (isGroup(c)) for (const l of c.children) rows.push([leafUsage(c.name, l), l.describe + aliasNote(l)]);
      else rows.push([leafUsage('', c), c.describe]);
    }
    out.push(pad(rows));
  }
  out.push(
    '',
    'FLAGS',
    pad([
      ['--host <name>', 'Talk to this host for one invocation'],
      ['--project <id>', 'Act on this project (project-scoped commands)'],
      ['--json', 'Print the API objects as JSON (list and show commands)'],
      ['--help', 'Show help for a command'],
      ['--version', 'Print the version'],
    ]),
    '',
    'ENVIRONMENT',
    pad([
      ['SVC_API_URL', 'API base URL (with or without /v1); overrides the host'],
      ['SVC_CLI_TOKEN', 'Token to use (SVC_EXECUTOR_TOKEN as fallback); no config file needed'],
      ['SVC_PROJECT_ID', 'Project for one command'],
      ['SVC_CONFIG_FILE', 'Config file (default ~/.config/svc/config.json)'],
      ['SVC_DASHBOARD_URL', 'Dashboard URL for login and open'],
      ['SVC_PAGER, PAGER', 'Pager for diffs on a terminal'],
      ['NO_COLOR, CLICOLOR, CLICOLOR_FORCE', 'Color control'],
    ]),
    '',
    'EXIT CODES',
    '  0 ok, 1 the operation failed, 2 usage error',
    '',
    "Run 'svc <command> <subcommand> --help' for a command's flags.",
  );
  return out.join('\n') + '\n';
}

function aliasNote(l: LeafSpec): string {
  return l.aliases?.length ? ` (alias: ${l.aliases.join(', ')})` : '';
}

export function groupHelp(g: GroupSpec): string {
  return [
    g.describe,
    '',
    'USAGE',
    `  svc ${g.name} <subcommand> [flags]`,
    '',
    'COMMANDS',
    pad(g.children.map((l) => [leafUsage('', l), l.describe + aliasNote(l)])),
    '',
    `Run 'svc ${g.name} <subcommand> --help' for a command's flags.`,
  ].join('\n') + '\n';
}
