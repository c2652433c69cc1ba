/**
 * The cloud's own services on a machine's network: instance metadata and credential endpoints hand
 * out the host's cloud identity (role credentials, managed-identity tokens, the agent's certificates),
 * so a sandbox must never reach them, whatever it is allowed otherwise (`--allow-private`, an IP
 * literal listed exactly). Their neighbours (the cloud's DNS resolver and time server in the same
 * blocks) go with them: nothing a sandbox needs, and a resolver that answers for the host's VPC.
 */

/** [network, prefix length]. */
type Ranges = ReadonlyArray<readonly [string, number]>;

export const METADATA_V4: Ranges = [
  // AWS IMDS (.254), its DNS (.253), time (.123) and Windows activation (.250, .251); GCP, Azure
  // IMDS, OpenStack, Oracle, DigitalOcean, Hetzner, Linode: all .254.
  ["169.254.169.0", 24],
  // ECS task credentials (169.254.170.2) and EKS Pod Identity (169.254.170.23).
  ["169.254.170.0", 24],
  // Tencent Cloud metadata.
  ["169.254.0.23", 32],
  // Scaleway metadata.
  ["169.254.42.42", 32],
  // Alibaba Cloud metadata.
  ["100.100.100.200", 32],
  // Azure WireServer: a public address, reached from every Azure VM; it serves the VM agent's
  // certificates and extension settings.
  ["168.63.129.16", 32],
];

export const METADATA_V6: Ranges = [
  // AWS over IPv6: IMDS ::254, DNS ::253, EKS Pod Identity ::23, time ::123.
  ["fd00:ec2::", 32],
  // GCP metadata on IPv6-only instances.
  ["fd20:ce::254", 128],
];

/**
 * Names that mean a metadata service wherever they resolve, refused before any lookup: a resolver
 * inside a cloud answers them with the addresses above, and one outside might answer anything.
 */
const METADATA_NAMES: ReadonlySet<string> = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.tencentyun.com",
  "metadata.platformequinix.com",
  "metadata.packet.net",
]);

/** True for a metadata service's name (lower-case, no trailing dot). */
export function isMetadataName(name: string): boolean {
  return METADATA_NAMES.has(name);
}
