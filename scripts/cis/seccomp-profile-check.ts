/**
 * CIS 5.21 with a custom seccomp profile: harness passes Docker's default profile plus restrictions
 * (src/sandbox/docker/container/seccomp-profile.ts), which the benchmark's literal test ("seccomp=unconfined" absent)
 * cannot tell from a looser one. Here a profile counts as "the default, not disabled" when it still
 * refuses by default and allows no syscall that Docker's default profile never allows.
 */
import dockerDefault from "../../src/sandbox/docker/container/docker-default-seccomp.json" with {
  type: "json",
};
import type { SeccompProfile } from "../../src/sandbox/docker/container/seccomp-profile.js";

const ALLOWING = new Set(["SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_NOTIFY"]);

/** Every syscall some rule of `profile` lets through (whatever its conditions). */
function allowedNames(profile: SeccompProfile): Set<string> {
  return new Set(profile.syscalls.filter((rule) => ALLOWING.has(rule.action)).flatMap((rule) => rule.names));
}

/** What the profile allows beyond Docker's default; ["(everything)"] when it allows by default. */
export function allowedBeyondDefault(profileJson: string): string[] {
  const profile = JSON.parse(profileJson) as SeccompProfile;
  if (ALLOWING.has(profile.defaultAction)) return ["(everything: defaultAction allows)"];
  const defaults = allowedNames(dockerDefault as SeccompProfile);
  return [...allowedNames(profile)].filter((name) => !defaults.has(name));
}
