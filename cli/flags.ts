/** Flags shared by many commands, declared once. */
import type { Argv } from 'yargs';

export const withHost = (y: Argv) => y.option('host', { type: 'string', describe: 'Host to talk to (see svc hosts ls)', requiresArg: true });
export const withJson = (y: Argv) => y.option('json', { type: 'boolean', describe: 'Print the API objects as JSON' });
export const withProject = (y: Argv) =>
  y.option('project', { type: 'string', describe: 'Project id or slug (default: SVC_PROJECT_ID, then .svc/link.json)', requiresArg: true });

export const str = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : String(v));
