/**
 * Retention's defaults and the env vars that change them, in a file that imports nothing, so
 * src/cli.ts can put them in `harness runs --help` without loading the runs code.
 */

/** The defaults. */
export const RETENTION_DEFAULTS = Object.freeze({
  /** HARNESS_RUNS_MAX_SIZE: 500 MiB. */
  maxBytes: 500 * 1024 ** 2,
  /** HARNESS_RUNS_MAX_AGE_DAYS: 30 days. */
  maxAgeDays: 30,
});

/** The env vars that set the limits (in the environment or `.env`). */
export const RETENTION_ENV = Object.freeze({
  maxSize: "HARNESS_RUNS_MAX_SIZE",
  maxAgeDays: "HARNESS_RUNS_MAX_AGE_DAYS",
});

/** Where runs live and how long they are kept, for the help of `harness runs`. */
export const RUNS_HELP = `
Runs are kept in $XDG_STATE_HOME/harness/runs (default ~/.local/state/harness/runs): a <run>.jsonl
transcript each, and <run>.outputs/ with the whole output of commands whose output was cut.
After every run harness prunes that directory: runs not written for ${RETENTION_DEFAULTS.maxAgeDays} days go; then, while it
holds more than ${RETENTION_DEFAULTS.maxBytes / 1024 ** 2} MiB, saved outputs go (oldest run first), then whole runs (oldest
first). A run still in progress and a --transcript file elsewhere are never touched. Set the limits
in the environment or .env: ${RETENTION_ENV.maxSize} (default 500m; e.g. 2g, or off) and
${RETENTION_ENV.maxAgeDays} (default ${RETENTION_DEFAULTS.maxAgeDays}; e.g. 90, or off).
`;
