/**
 * A path inside a repository as git names it: relative, no empty, `.` or `..` part, no
 * control characters, not starting with `-`. Such a path can neither leave the tree nor
 * be read as an option. Pure: used by the manifest's schema and the git plumbing.
 */
export const isRepoPath = (p: string, max = 1024): boolean =>
  p.length > 0 && p.length <= max && !p.startsWith('/') && !p.startsWith('-') && !/[\x00-\x1f\x7f]/.test(p) && p.split('/').every((c) => c !== '' && c !== '.' && c !== '..');
