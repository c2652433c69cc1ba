/**
 * `--allow maven`: Maven Central, or the mirrors the host's Maven settings name. Maven has no
 * command that prints its settings without downloading a plugin, so its files are read: the user's
 * `~/.m2/settings.xml`, then the installation's `conf/settings.xml` (found from `mvn` on PATH, or
 * MAVEN_HOME). Only `<mirrors>` are read; servers and their credentials never are.
 */
import { accessSync, constants, realpathSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { ConfigError } from "../errors.js";
import { readHostConfig } from "./host-tool.js";
import type { PresetGrant } from "./preset-grant.js";
import { isHttpUrl, unique, urlEntry, withoutCredentials } from "./preset-url.js";

const FLAG = "--allow maven";

/** Maven's built-in repository (`central`, in its super POM): where everything comes from by default. */
const CENTRAL = "https://repo.maven.apache.org/maven2/";

/**
 * Maven's own global settings refuse repositories over plain http that no mirror covers; the
 * settings given in their place keep that rule.
 */
const HTTP_BLOCKER =
  "<mirror><id>maven-default-http-blocker</id><mirrorOf>external:http:*</mirrorOf><url>http://0.0.0.0/</url><blocked>true</blocked></mirror>";

interface Mirror {
  id: string;
  mirrorOf: string;
  url: string;
}

/**
 * Every mirror's host, and Central unless a mirror stands in for it. The sandbox's Maven gets the
 * same mirrors as its global settings (HARNESS_MAVEN_SETTINGS, which /etc/mavenrc in the image
 * hands to Maven), so the user's own settings in the sandbox still come first.
 */
export function mavenGrant(env: NodeJS.ProcessEnv): PresetGrant {
  const mirrors = settingsFiles(env).flatMap((path) => {
    const text = readHostConfig(path, FLAG);
    return text === undefined ? [] : mirrorsOf(text, path, env);
  });
  const urls = [
    ...mirrors.map((m) => m.url),
    ...(mirrors.some((m) => coversCentral(m.mirrorOf)) ? [] : [CENTRAL]),
  ];
  const remote = urls.filter(isHttpUrl);
  if (remote.length === 0) {
    throw new ConfigError(
      `${FLAG}: Maven's settings name no http(s) repository (${urls.join(", ")}); give the host with --allow-host`,
    );
  }
  const settings = mirrors
    .filter((m) => isHttpUrl(m.url))
    .map(
      (m) =>
        `<mirror><id>${xml(m.id)}</id><mirrorOf>${xml(m.mirrorOf)}</mirrorOf><url>${xml(withoutCredentials(m.url))}</url></mirror>`,
    );
  return {
    hosts: unique(remote.map((url) => urlEntry(url, FLAG))),
    env:
      settings.length === 0
        ? []
        : [
            `HARNESS_MAVEN_SETTINGS=<settings><mirrors>${settings.join("")}${HTTP_BLOCKER}</mirrors></settings>`,
          ],
  };
}

/** The user's settings, then the installation's (Maven merges them in that order). */
function settingsFiles(env: NodeJS.ProcessEnv): string[] {
  const files: string[] = [];
  if (env["HOME"]) files.push(join(env["HOME"], ".m2", "settings.xml"));
  const home = env["MAVEN_HOME"]?.trim() || env["M2_HOME"]?.trim() || mavenHomeFromPath(env["PATH"] ?? "");
  if (home !== undefined) files.push(join(home, "conf", "settings.xml"));
  return files;
}

/** The installation `mvn` on PATH belongs to: `…/bin/mvn` (through its links) → `…`. */
function mavenHomeFromPath(path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, "mvn");
    try {
      accessSync(candidate, constants.X_OK);
      return dirname(dirname(realpathSync(candidate)));
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** `<mirror>` entries of a settings.xml (comments dropped), `${env.NAME}` filled in as Maven does. */
function mirrorsOf(text: string, path: string, env: NodeJS.ProcessEnv): Mirror[] {
  const body = text.replace(/<!--[\s\S]*?-->/g, "");
  const mirrors = /<mirrors>([\s\S]*?)<\/mirrors>/.exec(body)?.[1] ?? "";
  return [...mirrors.matchAll(/<mirror>([\s\S]*?)<\/mirror>/g)].flatMap((match) => {
    const field = (name: string) => {
      const raw = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(match[1] ?? "")?.[1];
      return raw === undefined ? undefined : interpolate(unxml(raw.trim()), path, env);
    };
    const url = field("url");
    if (url === undefined || field("blocked") === "true") return [];
    return [{ id: field("id") ?? "mirror", mirrorOf: field("mirrorOf") ?? "*", url }];
  });
}

/** Whether a `<mirrorOf>` pattern takes in `central`. */
function coversCentral(pattern: string): boolean {
  const items = pattern.split(",").map((item) => item.trim());
  if (items.includes("!central")) return false;
  return items.some((item) => item === "*" || item === "central" || item === "external:*");
}

function interpolate(text: string, path: string, env: NodeJS.ProcessEnv): string {
  return text.replace(/\$\{([^}]*)\}/g, (whole, name: string) => {
    const value = name.startsWith("env.")
      ? env[name.slice(4)]
      : name === "user.home"
        ? env["HOME"]
        : undefined;
    if (value === undefined)
      throw new ConfigError(
        `${FLAG}: ${path} uses ${whole}, which is not set; give the host with --allow-host`,
      );
    return value;
  });
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function unxml(text: string): string {
  return text
    .replace(/^<!\[CDATA\[([\s\S]*)\]\]>$/, "$1")
    .replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => ENTITIES[name] ?? "");
}

function xml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => `&${{ "&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos" }[c]};`,
  );
}
