import { expect } from 'chai';
import { scan } from '../../cli/app.js';
import { SECTIONS, isGroup } from '../../cli/command-table.js';
import { UsageError } from '../../cli/errors.js';
import { groupHelp, treeHelp } from '../../cli/help.js';

/** The whole tree as `svc help` prints it. Update deliberately when commands change. */
const TREE_HELP = `Work with change requests, projects and hosts of an svc service from the command line.

USAGE
  svc <command> [<subcommand>] [flags]

AUTH
  login                          Log in to a host (browser flow, or --token)
  logout                         Remove the stored token of the active or named host
  whoami                         Show the user and active account
  auth token <action> [<token>]  List (ls), create or revoke your tokens

HOSTS
  hosts ls             List hosts; the active one is marked (alias: list)
  hosts use [<name>]   Make a host the active one
  hosts add <name>     Add a host
  hosts rm <name>      Remove a host (alias: remove)
  hosts info [<name>]  Show a host (token masked)
  hosts current        Print the host commands here will use

PROJECTS
  projects ls                List projects (alias: list)
  projects info [<project>]  Show a project (default: the linked one)
  projects create <name>     Create a project (a managed repository, or --repo-url) (alias: new)
  projects link [<project>]  Link this directory to a project (.svc/link.json)
  projects unlink            Remove the link of this directory
  projects open [<project>]  Open a project's dashboard page

SESSIONS
  sessions ls                     List sessions (alias: list)
  sessions info <id>              Show a session (status, branch, base, agent, sandbox URL, errors) (alias: show)
  sessions new                    Start a session and wait until it runs (alias: create)
  sessions stop <id>              Stop a session: its sandbox goes, its branch stays (restart brings it back)
  sessions restart <id>           Re-provision a session in place
  sessions refresh <id>           Re-pull the session branch and restart its agent, same sandbox
  sessions rm <id>                Stop and delete a session (alias: remove, delete)
  sessions open <id>              Open a session's dashboard page
  sessions chat [<id>]            Talk to a session's agent (interactive, or --prompt) (alias: talk)
  sessions preview <id> [<port>]  Preview URL of a sandbox port (default 3000)

CHANGE REQUESTS
  cr ls                      List change requests (alias: list)
  cr show <cr>               Show a change request and its merge preview (alias: info, view)
  cr diff <cr>               Show the diff of a change request
  cr open                    Open a change request (alias: new, create)
  cr merge <cr>              Merge an open change request (--when-green: once its checks pass; --stack: with those below it)
  cr stack <cr>              Show the stack of a change request: the ones below it and above it
  cr checks <cr>             Show a change request's checks, statuses and merge-when-green
  cr close <cr>              Close an open change request
  cr reopen <cr>             Reopen a closed change request
  cr comment <cr>            Comment on a change request (--body; --path and --line for a line of the diff)
  cr comments <cr>           List the review comments of a change request
  cr resolve <cr> <comment>  Resolve a review comment (--unresolve to open it again)
  cr reviewed <cr>           Mark a change request reviewed at its head
  cr send-to-agent <cr>      Send the unresolved comments to the change request's session as one prompt

INSIGHTS
  insights  What the project's agents delivered and what it cost (--group-by, --since 30d)

CHANNELS
  channels ls            List the project's channels (alias: list)
  channels add <kind>    Connect a channel: add slack --webhook-url <url>
  channels rm <channel>  Disconnect a channel (alias: remove)

BUDGETS
  budget <action> [<limit>]  Show or set the project's (--account: your account's) model budget: set <limit>|none --per day|month

SELF-HOST
  self-host start                      Create the config if needed, start the stack, log in to host selfhost
  self-host configure                  Create the config and choose optional integrations
  self-host env <action> [<pairs>...]  env ls (secrets masked) | env set KEY=VALUE ...
  self-host logs [<service>]           Follow the logs of one service or all
  self-host stop                       Stop the stack; the data is kept

INSTALL
  update     Update the CLI (re-runs the install)
  uninstall  Remove the CLI, its shim, ~/.svc and the stored tokens

SCAFFOLD
  init [<name>]  Scaffold svc.toml, .svc/ and the agent skill here (or in a new dir <name>)
  ship           Push this repo to its svc project (created on first run) and open a CR

SECRETS, ENV, TRIGGERS, APPS
  secrets ls                   List secret names and the manifest [env] spec; missing ones marked (alias: list)
  secrets set <assignments..>  Set secrets: NAME=VALUE ... (NAME=- reads stdin)
  secrets unset <names..>      Remove secrets (alias: rm)
  env pull                     Write a .env skeleton: names only, values blank
  env push                     Upload NAME=VALUE lines of a dotenv file as secrets
  triggers ls                  List triggers with last_fired_at (alias: list)
  triggers info <slug>         Show a trigger and its recent fires (alias: show)
  triggers fire <slug>         Fire a trigger now
  triggers enable <slug>       Open a CR setting enabled = true
  triggers disable <slug>      Open a CR setting enabled = false
  queue ls                     List the queue in order: state, speculative result, checks; who left and why (alias: list)
  queue rm <cr>                Take a change request out of the queue (alias: remove)
  apps ls                      List apps, their status and URL (alias: list)
  apps info <name>             Show an app and its recent deploys (alias: show)

OTHER
  version              Print the version
  help [<command>...]  Show help for svc or a command

FLAGS
  --host <name>   Talk to this host for one invocation
  --project <id>  Act on this project (project-scoped commands)
  --json          Print the API objects as JSON (list and show commands)
  --help          Show help for a command
  --version       Print the version

ENVIRONMENT
  SVC_API_URL                         API base URL (with or without /v1); overrides the host
  SVC_CLI_TOKEN                       Token to use (SVC_EXECUTOR_TOKEN as fallback); no config file needed
  SVC_PROJECT_ID                      Project for one command
  SVC_CONFIG_FILE                     Config file (default ~/.config/svc/config.json)
  SVC_DASHBOARD_URL                   Dashboard URL for login and open
  SVC_PAGER, PAGER                    Pager for diffs on a terminal
  NO_COLOR, CLICOLOR, CLICOLOR_FORCE  Color control

EXIT CODES
  0 ok, 1 the operation failed, 2 usage error

Run 'svc <command> <subcommand> --help' for a command's flags.
`;

describe('cli command tree', () => {
  it('svc help lists the whole tree (snapshot)', () => {
    expect(treeHelp()).to.equal(TREE_HELP);
  });

  it('every command in the table appears in the tree help', () => {
    const help = treeHelp();
    for (const s of SECTIONS.flatMap((x) => x.commands)) {
      if (isGroup(s)) for (const l of s.children) expect(help).to.contain(`${s.name} ${l.name}`);
      else expect(help).to.contain(`  ${s.name}`);
    }
  });

  it('group help lists the subcommands with aliases', () => {
    const cr = SECTIONS.flatMap((x) => x.commands).find((c) => c.name === 'cr');
    if (!cr || !isGroup(cr)) throw new Error('no cr group');
    const h = groupHelp(cr);
    expect(h).to.contain('show <cr>').and.contain('alias: info, view').and.contain('alias: new, create');
  });

  it('every leaf module loads and exports a handler', async () => {
    for (const s of SECTIONS.flatMap((x) => x.commands)) {
      for (const leaf of isGroup(s) ? s.children : [s]) {
        const mod = await leaf.load();
        expect(mod.handler, leaf.name).to.be.a('function');
      }
    }
  });

  describe('scan', () => {
    it('finds the command words past flags and global flag values', () => {
      const s = scan(['--host', 'selfhost', 'cr', '--project', 'p', 'ls', '--json']);
      expect(s.group?.name).to.equal('cr');
      expect(s.leaf?.name).to.equal('ls');
    });
    it('resolves aliases', () => {
      expect(scan(['cr', 'new']).leaf?.name).to.equal('open');
      expect(scan(['cr', 'info', '3']).leaf?.name).to.equal('show');
      expect(scan(['project', 'ls']).group?.name).to.equal('projects');
    });
    it('notices --help', () => {
      expect(scan(['cr', '--help']).help).to.equal(true);
      expect(scan(['cr', 'ls', '-h']).help).to.equal(true);
    });
    it('unknown commands are usage errors naming the parent', () => {
      expect(() => scan(['nope', 'more'])).to.throw(UsageError, 'unknown command "nope" for "svc"');
      expect(() => scan(['crr'])).to.throw(UsageError, 'unknown command "crr" for "svc"; did you mean "cr"?');
      // One word that is no command and no typo of one: `svc <project-name>` (init in a new dir).
      expect(scan(['nope']).projectName).to.equal('nope');
      expect(() => scan(['cr', 'nope'])).to.throw(UsageError, 'unknown command "nope" for "svc cr"');
    });
    it('stops at --', () => {
      expect(scan(['--', 'cr']).leaf).to.equal(undefined);
    });
  });
});
