// The HTTP guard: every route needs credentials unless marked @Public(). Routes say who may call them with
// @Access('admin' | 'tenant' | 'member'); 'member' (the default) admits a tenant key or a user token. A
// credential of the wrong kind is `forbidden`; a missing or bad one is `unauthorized`. SSE routes marked
// @QueryToken() also accept `?token=` (browsers' EventSource cannot send headers).

import {
  createParamDecorator,
  Injectable,
  SetMetadata,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { CanopyException, setAuditContext, type AuditActor } from '@canopy/common';
import type { Scope } from '@canopy/core';
import { AuthService } from './auth.service';
import { scopeOf, type Grant, type Principal } from './principal';

/**
 * admin: the admin key; tenant: an API key; member: an API key or a user token; operator: an API key or the admin;
 * any: every valid credential (the route itself narrows what each one sees).
 */
export type AccessLevel = 'admin' | 'tenant' | 'member' | 'operator' | 'any';

const PUBLIC = 'canopy:public';
const ACCESS = 'canopy:access';
const QUERY_TOKEN = 'canopy:query-token';

export const Public = () => SetMetadata(PUBLIC, true);
export const Access = (level: AccessLevel) => SetMetadata(ACCESS, level);
export const QueryToken = () => SetMetadata(QUERY_TOKEN, true);

/** A request past the guard: its principal, and what its credential grants (the SSE streams keep it). */
export type AuthedRequest = Request & { principal?: Principal; grant?: Grant };

@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    const allowQuery = this.reflector.getAllAndOverride<boolean>(QUERY_TOKEN, targets) ?? false;
    const grant = await this.auth.grant(credentialOf(req, allowQuery));
    const principal = grant.principal;
    const level = this.reflector.getAllAndOverride<AccessLevel>(ACCESS, targets) ?? 'member';
    if (!admits(level, principal)) {
      throw new CanopyException('forbidden', `this route needs ${describe(level)}`);
    }
    req.principal = principal;
    req.grant = grant;
    // Who acts, for the audit events written while serving this request.
    setAuditContext({ actor: auditActorOf(principal), requestId: requestIdOf(req) });
    return true;
  }
}

/** The audit log's name for a principal. */
export function auditActorOf(principal: Principal): AuditActor {
  switch (principal.kind) {
    case 'admin':
      return { type: 'admin' };
    case 'tenant':
      return { type: 'key', keyId: principal.keyId };
    case 'user':
      return { type: 'user', userId: principal.userId };
  }
}

function requestIdOf(req: Request): string | null {
  const id = (req as { id?: unknown }).id;
  return typeof id === 'string' ? id : null;
}

export function credentialOf(
  req: { headers: Request['headers']; query?: unknown },
  allowQuery: boolean,
): string | undefined {
  const header = req.headers.authorization;
  if (typeof header === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match)
      throw new CanopyException('unauthorized', 'the Authorization header must be "Bearer <credential>"');
    return match[1];
  }
  if (allowQuery) {
    const token = (req.query as Record<string, unknown> | undefined)?.token;
    if (typeof token === 'string' && token) return token;
  }
  return undefined;
}

function admits(level: AccessLevel, p: Principal): boolean {
  if (level === 'admin') return p.kind === 'admin';
  if (level === 'tenant') return p.kind === 'tenant';
  if (level === 'operator') return p.kind === 'tenant' || p.kind === 'admin';
  if (level === 'any') return true;
  return p.kind === 'tenant' || p.kind === 'user';
}

function describe(level: AccessLevel): string {
  switch (level) {
    case 'admin':
      return 'the admin key';
    case 'tenant':
      return 'a tenant API key';
    case 'operator':
      return 'a tenant API key or the admin key';
    case 'any':
      return 'a credential';
    default:
      return 'a tenant API key or a user token';
  }
}

/** The authenticated principal of the request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new CanopyException('unauthorized', 'missing credentials');
  return principal;
});

/** The Scope a tenant key or user token acts in. */
export const CurrentScope = createParamDecorator((_: unknown, ctx: ExecutionContext): Scope => {
  const principal = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  const scope = principal ? scopeOf(principal) : null;
  if (!scope) throw new CanopyException('forbidden', 'this route needs a tenant API key or a user token');
  return scope;
});
