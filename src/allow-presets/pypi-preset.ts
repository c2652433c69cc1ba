/** `--allow pypi` (`pip`): the indexes the host's pip uses. */
import { ConfigError } from "../errors.js";
import { ask, type ToolRunner } from "./host-tool.js";
import type { PresetGrant } from "./preset-grant.js";
import { isHttpUrl, unique, urlEntry, withoutCredentials } from "./preset-url.js";

const FLAG = "--allow pypi";

/**
 * pip's index (`index-url`: PIP_INDEX_URL, else pip's configuration, else pip's built-in default with
 * its file storage host) and its extra indexes (`extra-index-url`, same order). file:// URLs need no
 * network and are left out. The sandbox's pip gets the same indexes; one served over plain http is
 * also a trusted host there, as pip refuses it otherwise.
 */
export function pypiGrant(env: NodeJS.ProcessEnv, run: ToolRunner): PresetGrant {
  const envIndex = env["PIP_INDEX_URL"]?.trim() || undefined;
  const envExtras = env["PIP_EXTRA_INDEX_URL"]?.trim() || undefined;
  let config = new Map<string, string>();
  if (envIndex === undefined || envExtras === undefined) {
    try {
      config = pipConfig(env, run);
    } catch (error) {
      // With the index in the environment, pip's files only could add extra indexes.
      if (envIndex === undefined) throw error;
    }
  }
  // pip install reads its own section over [global]; the environment over both.
  const configured = (key: string) => config.get(`install.${key}`) ?? config.get(`global.${key}`);
  const index = envIndex ?? configured("index-url");
  const extras = splitUrls(envExtras ?? configured("extra-index-url") ?? "");
  // pip's default is its index and the host its files come from; only the index is pip's to read.
  const indexes = index === undefined ? pipDefault(env, run) : [index];
  const urls = [...indexes, ...extras];
  const remote = urls.filter(isHttpUrl);
  if (remote.length === 0) {
    throw new ConfigError(
      `${FLAG}: pip's configuration names no http(s) index (${urls.join(", ") || "none"}); give the host with --allow-host`,
    );
  }
  const hosts = unique(remote.map((url) => urlEntry(url, FLAG)));
  const sandboxIndex = indexes[0] !== undefined && isHttpUrl(indexes[0]) ? indexes[0] : undefined;
  const sandboxExtras = extras.filter(isHttpUrl);
  const plain = unique(
    [sandboxIndex, ...sandboxExtras]
      .filter((url): url is string => url !== undefined && /^http:\/\//i.test(url))
      .map((url) => urlEntry(url, FLAG)),
  );
  return {
    hosts,
    env: [
      ...(sandboxIndex === undefined ? [] : [`PIP_INDEX_URL=${withoutCredentials(sandboxIndex)}`]),
      ...(sandboxExtras.length === 0
        ? []
        : [`PIP_EXTRA_INDEX_URL=${sandboxExtras.map(withoutCredentials).join(" ")}`]),
      ...(plain.length === 0 ? [] : [`PIP_TRUSTED_HOST=${plain.join(" ")}`]),
    ],
  };
}

/** `python3 -m pip config list`: lines like `global.index-url='https://…'`. */
function pipConfig(env: NodeJS.ProcessEnv, run: ToolRunner): Map<string, string> {
  const text = ask("python3", ["-I", "-m", "pip", "config", "list"], env, run, FLAG);
  const values = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^([\w.-]+)=(['"])(.*)\2\s*$/.exec(line.trim());
    // `:env:.` lines repeat PIP_* variables, which were read first.
    if (match?.[1] !== undefined && match[3] !== undefined) values.set(match[1], match[3]);
  }
  return values;
}

/** pip's own default index and the host its files are served from, read from pip itself. */
function pipDefault(env: NodeJS.ProcessEnv, run: ToolRunner): string[] {
  const program =
    "from pip._internal.models.index import PyPI; print(PyPI.simple_url); print('https://' + PyPI.file_storage_domain + '/')";
  return splitUrls(ask("python3", ["-I", "-c", program], env, run, FLAG));
}

/** Values of `extra-index-url` are separated by whitespace (a config file's value may span lines). */
function splitUrls(text: string): string[] {
  return text
    .replaceAll("\\n", "\n")
    .split(/\s+/)
    .filter((url) => url !== "");
}
