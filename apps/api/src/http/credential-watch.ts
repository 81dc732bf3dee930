// Open connections die with their credential. Every WebSocket and SSE stream of this process is watched with the
// grant it was opened with: it is cut when the credential expires (a timer), when its key (a user token's minting
// key) is revoked and when its tenant is disabled, in every api process of the deployment, through the credential
// notices (Redis pub/sub when distributed, in-process when embedded). A notice also makes each process forget its
// cached lookups, so HTTP refuses the credential everywhere at once too.
//
// The process that records a revocation applies it itself before answering, then publishes the notice (its own
// echo changes nothing). Notices are delivered at most once; one missed while the subscriber connection was away is
// made up for when it is back (every cached lookup forgotten, every connection checked again), and a slow re-check
// of every connection's key and tenant (through the cached lookups) covers a notice that could not be published.

import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AuthService, type Grant } from '@canopy/auth';
import type { CredentialChanges } from '@canopy/tenancy';
import {
  CREDENTIAL_NOTICES,
  type CredentialNotice,
  type CredentialNotices,
  type Unsubscribe,
} from '@canopy/realtime';

/** Why a connection was cut: its credential no longer authenticates, or its tenant is disabled. */
export type CutReason = 'unauthorized' | 'tenant_disabled';

/** How often every open connection's key and tenant are checked again (a backstop for a lost notice). */
const RECHECK_MS = 60_000;
/** The longest delay a Node timer takes; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2_147_483_647;

const MESSAGES = {
  revoked: 'the API key behind this credential was revoked',
  expired: 'this credential expired',
  disabled: 'this tenant is disabled',
} as const;

/** One open connection under watch. */
export class WatchedConnection {
  /** Set once the connection was cut: no frame of it acts any more. */
  private cut: { code: CutReason; message: string } | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly grant: Grant,
    private readonly onCut: (reason: CutReason, message: string) => void,
    private readonly release: (watched: WatchedConnection) => void,
  ) {
    this.armExpiry();
  }

  /** Why a frame must not act now: the connection was cut, or its credential expired (even before its timer ran). */
  get refusal(): { code: CutReason; message: string } | null {
    if (this.cut) return this.cut;
    if (Date.now() >= this.grant.expiresAt) return { code: 'unauthorized', message: MESSAGES.expired };
    return null;
  }

  /** Cuts the connection (once): its owner tells the client and closes it. */
  end(code: CutReason, message: string): void {
    if (this.cut) return;
    this.cut = { code, message };
    this.stop();
    this.onCut(code, message);
  }

  /** The connection is gone: no more watching. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.release(this);
  }

  private armExpiry(): void {
    if (!Number.isFinite(this.grant.expiresAt)) return;
    const delay = this.grant.expiresAt - Date.now();
    if (delay <= 0) {
      // Expired while being set up: cut on the next turn, once the owner holds the connection.
      this.timer = setTimeout(() => this.end('unauthorized', MESSAGES.expired), 0);
    } else {
      this.timer = setTimeout(() => this.armExpiry(), Math.min(delay, MAX_TIMER_MS));
    }
    this.timer.unref();
  }
}

@Injectable()
export class CredentialWatch implements CredentialChanges, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(CredentialWatch.name);
  /** Watched connections of a tenant's credentials, by tenant (the admin key's are never cut by a notice). */
  private readonly byTenant = new Map<string, Set<WatchedConnection>>();
  private unsubscribe: Unsubscribe | null = null;
  private recheckTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly auth: AuthService,
    @Inject(CREDENTIAL_NOTICES) private readonly notices: CredentialNotices,
  ) {}

  onModuleInit(): void {
    // Not awaited: a Redis that is away at boot must not keep the api from starting (it listens once Redis is back).
    void this.listen();
    this.recheckTimer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.recheckTimer.unref();
  }

  // After the drain (connections are watched until they close), before Redis closes (this module is above it).
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.recheckTimer) clearInterval(this.recheckTimer);
    await this.unsubscribe?.().catch(() => undefined);
  }

  /** Connections of tenants' credentials watched now. */
  get size(): number {
    let n = 0;
    for (const set of this.byTenant.values()) n += set.size;
    return n;
  }

  /** Watches a connection opened with `grant`; `onCut` closes it. Call `stop()` on the result when it closes. */
  watch(grant: Grant, onCut: (reason: CutReason, message: string) => void): WatchedConnection {
    const tenantId = grant.principal.kind === 'admin' ? null : grant.principal.tenantId;
    const watched = new WatchedConnection(grant, onCut, (w) => {
      if (tenantId === null) return;
      const set = this.byTenant.get(tenantId);
      set?.delete(w);
      if (set?.size === 0) this.byTenant.delete(tenantId);
    });
    if (tenantId !== null) {
      let set = this.byTenant.get(tenantId);
      if (!set) this.byTenant.set(tenantId, (set = new Set()));
      set.add(watched);
    }
    return watched;
  }

  /** A key was revoked: it (and the user tokens it minted) stops working in every process of the deployment. */
  keyRevoked(tenantId: string, keyId: string): Promise<void> {
    return this.announce({ type: 'key_revoked', tenantId, keyId });
  }

  /** A tenant was disabled (every connection of it is cut) or enabled again, in every process. */
  tenantChanged(tenantId: string, disabled: boolean): Promise<void> {
    return this.announce({ type: disabled ? 'tenant_disabled' : 'tenant_enabled', tenantId });
  }

  /** Applies the notice here at once (before the route answers), then tells the other processes. */
  private async announce(notice: CredentialNotice): Promise<void> {
    this.apply(notice);
    try {
      await this.notices.publish(notice);
    } catch (err) {
      // The change is recorded; the other processes see it through their re-check instead of at once.
      this.logger.warn({ err, notice }, 'could not publish a credential notice');
    }
  }

  private apply(notice: CredentialNotice): void {
    switch (notice.type) {
      case 'key_revoked':
        this.auth.forgetKey(notice.keyId);
        this.cutWhere(notice.tenantId, (g) => g.keyId === notice.keyId, 'unauthorized', MESSAGES.revoked);
        return;
      case 'tenant_disabled':
        this.auth.forgetTenant(notice.tenantId);
        this.cutWhere(notice.tenantId, () => true, 'tenant_disabled', MESSAGES.disabled);
        return;
      case 'tenant_enabled':
        this.auth.forgetTenant(notice.tenantId);
        return;
    }
  }

  private cutWhere(tenantId: string, which: (grant: Grant) => boolean, reason: CutReason, message: string) {
    for (const watched of [...(this.byTenant.get(tenantId) ?? [])]) {
      if (which(watched.grant)) watched.end(reason, message);
    }
  }

  /** Subscribes to the notices, trying again while the transport is away. */
  private async listen(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        const unsubscribe = await this.notices.subscribe(
          (notice) => this.apply(notice),
          () => this.missed(),
        );
        if (this.stopped) await unsubscribe();
        else this.unsubscribe = unsubscribe;
        // Notices published before this subscription may have been missed.
        if (attempt > 0) this.missed();
        return;
      } catch (err) {
        this.logger.warn({ err }, 'could not subscribe to credential notices; trying again');
        await new Promise((r) => setTimeout(r, Math.min(5_000, 200 * 2 ** attempt)).unref());
      }
    }
  }

  /** Notices may have been lost: nothing cached is trusted, every connection is checked again. */
  private missed(): void {
    this.auth.forgetAll();
    void this.recheck();
  }

  /** Checks every watched connection's tenant and key again (through the cached lookups: one query per miss). */
  private async recheck(): Promise<void> {
    for (const [tenantId, set] of [...this.byTenant]) {
      try {
        if (await this.auth.isTenantDisabled(tenantId)) {
          this.cutWhere(tenantId, () => true, 'tenant_disabled', MESSAGES.disabled);
          continue;
        }
        const keys = new Set([...set].map((w) => w.grant.keyId).filter((k): k is string => k !== null));
        for (const keyId of keys) {
          if (await this.auth.isKeyRevoked(tenantId, keyId))
            this.cutWhere(tenantId, (g) => g.keyId === keyId, 'unauthorized', MESSAGES.revoked);
        }
      } catch (err) {
        // The database is away: the next round checks again.
        this.logger.debug({ err }, 'credential re-check failed');
      }
    }
  }
}
