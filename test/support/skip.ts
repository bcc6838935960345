/**
 * A test that needs something of the machine (Docker, bubblewrap, opencode, compose)
 * skips with the reason printed where it is missing on a developer's machine, and FAILS
 * under CI (`CI` set, as .ci/run does): CI installs everything, so a missing piece there
 * is a broken install step, never a silent skip.
 */
export function skipUnlessCi(ctx: Mocha.Context, reason: string): never {
  if (process.env.CI) throw new Error(`required in CI but unavailable: ${reason}`);
  console.log(`    (skipped: ${reason})`);
  return ctx.skip();
}
