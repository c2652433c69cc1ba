/**
 * `.env.example`, made from the table: the variables `run` needs, then every other one with its
 * flag, help and default, the widening ones named but never set, and the price variables.
 * `npm run gen:env-example` writes it; a unit test checks the file is what this makes.
 */
import { PRICE_ENV_VARS } from "../model/pricing.js";
import { defaultText, flagName, helpLine } from "./setting.js";
import { FREE_DOTENV_KEYS, SETTING_LIST } from "./settings.js";

/** The sample after `=`: the example, else the default where it is a value one could type ("2g", "120"). */
function sample(setting: (typeof SETTING_LIST)[number]): string {
  if (setting.example !== undefined) return setting.example;
  const shown = defaultText(setting);
  return shown !== undefined && /^[\w.]+$/.test(shown) ? shown : "";
}

const COLUMN = 31;

export function envExampleText(): string {
  const withEnv = SETTING_LIST.filter((s) => s.env !== undefined);
  const required = withEnv.filter((s) => s.required);
  const widening = withEnv.filter((s) => s.widens !== undefined);
  const optional = withEnv.filter((s) => !s.required && s.widens === undefined);
  const lines = [
    "# Copy to .env (harness loads it from the current directory). Flags override these.",
    "# Keep .env outside the workspace you give the sandbox: a task can read (and create) files there.",
    "# A .env a sandbox wrote (or that changed while one could write its directory) sets nothing but",
    `# ${[...FREE_DOTENV_KEYS].join(", ")} until you read it and run \`harness trust-env PATH\`.`,
    "# Made from src/settings/ by `npm run gen:env-example`: change the table there, not this file.",
    "",
    ...required.flatMap((s) => [
      `# Required for \`harness run\`: ${helpLine(s, s.help, false)}${s.flag === undefined ? "" : ` (${flagName(s)} overrides it)`}.`.replace(
        /\.\.$/,
        ".",
      ),
      `${s.env}=`,
    ]),
    "",
    "# Optional settings, each the same as its flag.",
    ...optional.map((s) => {
      const head = `# ${s.env}=${sample(s)}`;
      const what =
        s.flag === undefined ? helpLine(s, s.help, false) : `${flagName(s)}: ${helpLine(s, s.help, false)}`;
      return `${head.padEnd(COLUMN)} # ${what}`;
    }),
    "# What widens the sandbox never comes from a .env (a sandbox can write one): pass the flag, or",
    "# export the variable in the real environment:",
    ...widening.map(
      (s) =>
        `#   ${s.env} (${flagName(s)}${s.widens?.unless === undefined ? "" : `, anything but ${s.widens.unless}`})`,
    ),
    "# Prices in USD per million tokens, for models the built-in table does not know (docs/output-formats.md).",
    ...PRICE_ENV_VARS.map((name) => `# ${name}=`),
  ];
  return `${lines.join("\n")}\n`;
}
