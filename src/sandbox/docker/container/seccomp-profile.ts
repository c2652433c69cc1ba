/**
 * The sandbox's seccomp profile: Docker's default for Engine 20.10 (docker-default-seccomp.json,
 * unchanged, see its NOTICE) plus rules that stop a process from giving a file the setuid or setgid
 * bit. A task runs as the workspace owner; a set-id file it left in the bind-mounted workspace would
 * give the owner's uid to any other host user who ran it. Without CAP_FSETID the kernel still lets
 * an owner set S_ISUID, so the refusal has to be a syscall filter.
 * Everything else is the default profile as is: as strict as Docker's, never less.
 */
import dockerDefault from "./docker-default-seccomp.json" with { type: "json" };

/** One argument condition, as Docker's profile format (OCI LinuxSeccompArg) spells it. */
export interface SeccompArg {
  index: number;
  /** The mask, for SCMP_CMP_MASKED_EQ. */
  value: number;
  /** What the masked argument must equal, for SCMP_CMP_MASKED_EQ. */
  valueTwo?: number;
  op: string;
}

/** Docker's `Filter`: when a rule applies (capabilities, daemon architecture, kernel). */
export interface SeccompFilter {
  caps?: string[];
  arches?: string[];
  minKernel?: string;
}

export interface SeccompRule {
  names: string[];
  action: string;
  errnoRet?: number;
  args: SeccompArg[] | null;
  comment: string;
  includes: SeccompFilter;
  excludes: SeccompFilter;
}

export interface SeccompProfile {
  defaultAction: string;
  archMap: { architecture: string; subArchitectures: string[] }[];
  syscalls: SeccompRule[];
}

/** S_ISUID | S_ISGID. */
const SET_ID_BITS = 0o6000;
/**
 * O_CREAT, and __O_TMPFILE (O_TMPFILE is that bit plus O_DIRECTORY): the flags that make open use its
 * mode.
 */
const CREATING_FLAGS = 0o100 | 0o20000000;
/**
 * Architectures whose open flags have other values (MIPS), in the names Docker matches a rule's
 * arches against (the names Docker gives Go's architectures, and Go's own): there only the mode rule
 * applies. Every other architecture in the default profile's archMap uses the values above.
 */
const OTHER_FLAG_VALUES = ["mips", "mipsle", "mipsel", "mips64", "mips64n32", "mipsel64", "mips3l64n32"];
const ENOSYS = 38;

/** Which argument holds the mode (and, for open/openat, the flags). */
const MODE_ARGUMENT: Record<string, number> = {
  chmod: 1,
  fchmod: 1,
  fchmodat: 2,
  creat: 1,
  mknod: 1,
  mknodat: 2,
  open: 2,
  openat: 3,
};
const FLAGS_ARGUMENT: Record<string, number> = { open: 1, openat: 2 };

/**
 * Refused outright. openat2 takes its mode in a struct seccomp cannot read: ENOSYS makes libc fall
 * back to openat, which the rules see. io_uring's IORING_OP_OPENAT creates files with any mode and
 * no syscall a filter could check (tried: it made a setuid file under Docker 20.10's default); Docker
 * 25 and later leave io_uring out of the default profile as well, so it gets the default EPERM.
 */
const REFUSED = ["openat2", "io_uring_setup", "io_uring_enter", "io_uring_register"];

function allow(name: string, args: SeccompArg[], comment: string, excludes: SeccompFilter = {}): SeccompRule {
  return { names: [name], action: "SCMP_ACT_ALLOW", args, comment, includes: {}, excludes };
}

/** (argument & mask) == 0; masked, so bits above 32 a caller leaves in the register change nothing. */
function noneOf(index: number, mask: number): SeccompArg {
  return { index, value: mask, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" };
}

/**
 * Conditional allows. Separate rules for one syscall are alternatives (either allows it); a call
 * that matches none gets the profile's default action, EPERM, as any call the profile leaves out.
 */
export function setIdRules(): SeccompRule[] {
  const rules = Object.entries(MODE_ARGUMENT).map(([name, index]) =>
    allow(name, [noneOf(index, SET_ID_BITS)], "harness: no setuid/setgid bit in the mode"),
  );
  // open without O_CREAT/O_TMPFILE ignores its mode, and the register may hold anything there.
  const opens = Object.entries(FLAGS_ARGUMENT).map(([name, index]) =>
    allow(name, [noneOf(index, CREATING_FLAGS)], "harness: not creating, so the mode is unused", {
      arches: OTHER_FLAG_VALUES,
    }),
  );
  const refused: SeccompRule = {
    names: ["openat2"],
    action: "SCMP_ACT_ERRNO",
    errnoRet: ENOSYS,
    args: [],
    comment: "harness: the mode is in a struct the filter cannot read; libc falls back to openat",
    includes: {},
    excludes: {},
  };
  return [...rules, ...opens, refused];
}

/**
 * The default profile with `names` taken out of every unconditional allow. In libseccomp an
 * unconditional allow of a syscall wins over conditional rules for it, so the conditional rules only
 * work once the syscall is gone from the default's big allow list.
 */
export function withoutUnconditionalAllows(
  profile: SeccompProfile,
  names: readonly string[],
): SeccompProfile {
  const drop = new Set(names);
  const syscalls = profile.syscalls
    .map((rule) =>
      rule.action === "SCMP_ACT_ALLOW" && (rule.args ?? []).length === 0
        ? { ...rule, names: rule.names.filter((name) => !drop.has(name)) }
        : rule,
    )
    .filter((rule) => rule.names.length > 0);
  return { ...profile, syscalls };
}

/** Docker's default profile plus the set-id rules. */
export function buildSandboxSeccompProfile(
  base: SeccompProfile = dockerDefault as SeccompProfile,
): SeccompProfile {
  const guarded = [...Object.keys(MODE_ARGUMENT), ...REFUSED];
  const stripped = withoutUnconditionalAllows(base, guarded);
  return { ...stripped, syscalls: [...stripped.syscalls, ...setIdRules()] };
}

/** The profile as one line of JSON: the Engine API takes the content (`seccomp=<JSON>`), not a path. */
export const SANDBOX_SECCOMP_PROFILE = JSON.stringify(buildSandboxSeccompProfile());

/** For HostConfig.SecurityOpt. */
export function seccompSecurityOpt(): string {
  return `seccomp=${SANDBOX_SECCOMP_PROFILE}`;
}
