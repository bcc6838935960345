import { z } from 'zod';
import { branch, PageQuery, text, time, uuid } from './common.js';

/** Projects (contracts.md "Projects and tokens"). */

export const CreateProjectBody = z.strictObject({
  name: text(200).min(1),
  slug: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lowercase letters, digits and dashes, starting with a letter or digit, at most 63')
    .optional(),
  repo_url: text(2048).min(1).optional(),
  default_branch: branch('default_branch').optional(),
  account_id: z.uuid().optional(),
});
export type CreateProjectInput = z.input<typeof CreateProjectBody>;

export const ListProjectsQuery = PageQuery;

export const ProjectSchema = z.strictObject({
  project_id: uuid,
  account_id: uuid,
  name: z.string(),
  slug: z.string(),
  /** The clone URL; a managed repository's is this server's `/git/<slug>.git`. */
  repo_url: z.string().nullable(),
  default_branch: z.string(),
  created_at: time,
});
export type Project = z.infer<typeof ProjectSchema>;

export const OneProject = z.strictObject({ project: ProjectSchema });
export const ProjectPage = z.strictObject({ projects: z.array(ProjectSchema), next_cursor: z.string().nullable() });
