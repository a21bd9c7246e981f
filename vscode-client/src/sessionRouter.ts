/**
 * Two front ends (the webview and VS Code's Chat view) share one server: each `agent/stream`
 * event and `toolConfirm` request is routed to the front end whose session it belongs to.
 * A new session's id is only known from its first event (or its result), so new sessions start
 * one at a time: the first event of an unknown session belongs to the one start that waits for
 * its id, and the next start waits until then. Pure: unit-tested without VS Code.
 */
import type { ChatTransport } from './chatSession';
import type { CancelResult, ChatParams, ChatResult } from './protocol';

export type FrontEnd = 'view' | 'native';

/** Who a session belongs to: a front end, and for the Chat view the request's turn. */
export interface Owner {
  readonly frontEnd: FrontEnd;
}

interface Claim {
  owner: Owner;
  release(): void;
}

export class SessionRouter {
  private readonly owners = new Map<string, Owner>();
  private queue: Promise<void> = Promise.resolve();
  private pending: Claim | undefined;

  /** A transport for `owner` whose sessions are routed back to it. */
  transport(owner: Owner, inner: ChatTransport): ChatTransport {
    return {
      chat: (params, signal) => this.chat(owner, inner, params, signal),
      cancel: (sessionId): Promise<CancelResult> => inner.cancel(sessionId),
    };
  }

  /** The front end a session belongs to; the first event of a new session claims it. */
  ownerOf(sessionId: string): Owner | undefined {
    const known = this.owners.get(sessionId);
    if (known !== undefined) return known;
    const claim = this.pending;
    if (claim === undefined) return undefined;
    this.pending = undefined;
    this.owners.set(sessionId, claim.owner);
    claim.release();
    return claim.owner;
  }

  /** Whether the running server has this session (it was started or continued since the last restart). */
  knows(sessionId: string): boolean {
    return this.owners.has(sessionId);
  }

  /** The server restarted: its sessions are gone. */
  reset(): void {
    this.owners.clear();
  }

  private async chat(owner: Owner, inner: ChatTransport, params: ChatParams, signal: AbortSignal): Promise<ChatResult> {
    if (typeof params.sessionId === 'string') {
      this.owners.set(params.sessionId, owner);
      return inner.chat(params, signal);
    }
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const previous = this.queue;
    this.queue = previous.then(() => released);
    await previous;
    const claim: Claim = { owner, release };
    this.pending = claim;
    try {
      const result = await inner.chat(params, signal);
      this.owners.set(result.sessionId, owner);
      return result;
    } finally {
      if (this.pending === claim) this.pending = undefined;
      release();
    }
  }
}
