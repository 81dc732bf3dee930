// End-user tokens: short-lived JWTs (HS256) minted by a tenant for one of its users. The subject is the user id,
// `tid` binds the token to its tenant and `kid` names the tenant API key that minted it (revoking that key ends
// the token); nothing else in it is trusted.

import { SignJWT, errors, jwtVerify } from 'jose';
import { CanopyException } from '@canopy/common';

const ISSUER = 'canopy';
const AUDIENCE = 'canopy-api';

export interface UserClaims {
  tenantId: string;
  userId: string;
  /** The API key that minted the token; null for tokens minted before tokens named their key. */
  keyId: string | null;
  expiresAt: Date;
}

export class UserTokens {
  private readonly key: Uint8Array;

  constructor(
    secret: string,
    private readonly ttl: { defaultSeconds: number; maxSeconds: number },
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  async mint(
    tenantId: string,
    userId: string,
    ttlSeconds: number | undefined,
    keyId: string,
  ): Promise<{ token: string; expiresAt: Date }> {
    const ttl = ttlSeconds ?? this.ttl.defaultSeconds;
    if (ttl > this.ttl.maxSeconds) {
      throw CanopyException.badRequest(`ttlSeconds must be at most ${this.ttl.maxSeconds}`, {
        field: 'ttlSeconds',
      });
    }
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ tid: tenantId, kid: keyId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(userId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + ttl)
      .sign(this.key);
    return { token, expiresAt: new Date((now + ttl) * 1000) };
  }

  /** The claims of a valid token; unauthorized for anything else (expired, forged, malformed). */
  async verify(token: string): Promise<UserClaims> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ['HS256'],
        requiredClaims: ['sub', 'exp', 'tid'],
      });
      if (typeof payload.tid !== 'string' || typeof payload.sub !== 'string' || !payload.exp) {
        throw new CanopyException('unauthorized', 'invalid token');
      }
      return {
        tenantId: payload.tid,
        userId: payload.sub,
        keyId: typeof payload.kid === 'string' ? payload.kid : null,
        expiresAt: new Date(payload.exp * 1000),
      };
    } catch (err) {
      if (err instanceof CanopyException) throw err;
      if (err instanceof errors.JWTExpired) throw new CanopyException('unauthorized', 'token expired');
      throw new CanopyException('unauthorized', 'invalid token');
    }
  }
}
