/**
 * One sandbox's gateway, whatever the engine: started from the run's allowlist request and the
 * sandbox's tuning, with the command running now as the tag of every connection it opens (records
 * carry its callId, refusals land in its `denied`). How connections reach it is the engine's part:
 * docker/egress/egress-session.ts (a relay in the container, the socket bind-mounted) and
 * kubernetes/egress/pod-egress.ts (a mux over the pod's exec).
 */
import type { EgressMonitor, ExecResult } from "../sandbox.js";
import { type EgressRequest, SANDBOX_DEFAULTS } from "../sandbox-request.js";
import { type CallTag, EgressGateway, type GatewayOptions } from "./egress-gateway.js";
import type { Lookup } from "./policy/destination.js";

/** The gateway's settings a sandbox's options may carry (tests shorten them and map names to loopback). */
export interface GatewayTuning {
  egressLookup?: Lookup | undefined;
  egressUpstreamCa?: readonly string[] | undefined;
  egressIdleMs?: number | undefined;
  egressMaxConnectionMs?: number | undefined;
  egressMaxConnections?: number | undefined;
}

export class SandboxGateway {
  /** The command running now, so the gateway can tag its connections and collect its denials. */
  private call: CallTag | undefined;

  private constructor(readonly server: EgressGateway) {}

  /** Starts the gateway listening in `where.socketDir` (the socket given to `where.owner`, if any). */
  static async start(
    egress: EgressRequest,
    tuning: GatewayTuning,
    where: Pick<GatewayOptions, "socketDir" | "owner">,
  ): Promise<SandboxGateway> {
    const d = SANDBOX_DEFAULTS;
    let session: SandboxGateway | undefined;
    const server = await EgressGateway.start({
      ...where,
      allowHosts: egress.allowHosts,
      allowPrivate: egress.allowPrivate ?? false,
      limitBytes: egress.limitBytes ?? d.egressLimitBytes,
      wildcardNames: egress.wildcardNames,
      maxConnections: tuning.egressMaxConnections ?? d.egressMaxConnections,
      idleMs: tuning.egressIdleMs ?? d.egressIdleMs,
      maxConnectionMs: tuning.egressMaxConnectionMs ?? d.egressMaxConnectionMs,
      ...(tuning.egressLookup ? { lookup: tuning.egressLookup } : {}),
      secrets: egress.secrets,
      requestRules: egress.requestRules,
      upstreamCa: tuning.egressUpstreamCa,
      currentCall: () => session?.call,
    });
    session = new SandboxGateway(server);
    return session;
  }

  /** The gateway, as the rest of harness sees it. */
  get monitor(): EgressMonitor {
    return this.server;
  }

  /** From now until `endCall`, connections belong to `callId`; the tag collects their denials. */
  beginCall(callId: string | undefined): CallTag {
    const tag: CallTag = { callId, denied: [] };
    this.call = tag;
    return tag;
  }

  endCall(): void {
    this.call = undefined;
  }

  /**
   * A command's result as the model and the transcript get it: with its refusals (a copy: one
   * decided after the command ended must not change a returned result), and, when the run has
   * secrets, every value in any form the gateway recognises put back to its placeholder in its
   * output and refusals (the gateway keeps values out of the sandbox; this keeps one the sandbox
   * came to hold anyway out of the transcript).
   */
  callResult(result: ExecResult, tag: CallTag): ExecResult {
    const server = this.server;
    if (!server.hasSecrets) return { ...result, egressDenied: [...tag.denied] };
    const redact = (text: string): string => server.redact(text);
    return {
      ...result,
      stdout: redact(result.stdout),
      stderr: redact(result.stderr),
      egressDenied: tag.denied.map((d) => ({ ...d, host: redact(d.host), reason: redact(d.reason) })),
    };
  }
}
