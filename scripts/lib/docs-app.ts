// What docs/api.md needs from the running api: its OpenAPI document (as /docs/openapi.json serves it) and, for
// each route, who may call it (@Public / @Access / @QueryToken of libs/auth, read from the controllers'
// metadata). Used by scripts/docs.ts (on the built app) and apps/api/test/docs.e2e-spec.ts (on the test app).

import { RequestMethod } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import type { OpenApiDocument, RouteAccess } from './docs-sections';

// The metadata keys of libs/auth/src/auth.guard.ts and of @nestjs/common's route decorators.
const PUBLIC = 'canopy:public';
const ACCESS = 'canopy:access';
const QUERY_TOKEN = 'canopy:query-token';
const PATH = 'path';
const METHOD = 'method';

function joinPath(...parts: string[]): string {
  const path = `/${parts.join('/')}`.replace(/\/+/g, '/').replace(/\/$/, '');
  return (path || '/').replace(/:(\w+)/g, '{$1}');
}

const asList = (v: unknown): string[] =>
  Array.isArray(v) ? (v as string[]) : [typeof v === 'string' ? v : ''];

/** `METHOD /path/{param}` → who may call it, for every route of every controller of the app. */
export function routeAccess(app: INestApplication): Map<string, RouteAccess> {
  const found = new Map<string, RouteAccess>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as (new (...args: never[]) => unknown) | null;
      if (!controller || typeof controller !== 'function') continue;
      const proto = controller.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        if (name === 'constructor') continue;
        const handler = Object.getOwnPropertyDescriptor(proto, name)?.value as object | undefined;
        if (typeof handler !== 'function') continue;
        const methodPath: unknown = Reflect.getMetadata(PATH, handler);
        const verb: unknown = Reflect.getMetadata(METHOD, handler);
        if (methodPath === undefined || typeof verb !== 'number') continue;
        const read = <T>(key: string): T | undefined =>
          (Reflect.getMetadata(key, handler) as T | undefined) ??
          (Reflect.getMetadata(key, controller) as T | undefined);
        const access: RouteAccess = read<boolean>(PUBLIC)
          ? { level: 'public', queryToken: false }
          : {
              level: read<RouteAccess['level']>(ACCESS) ?? 'member',
              queryToken: read<boolean>(QUERY_TOKEN) ?? false,
            };
        for (const base of asList(Reflect.getMetadata(PATH, controller))) {
          for (const sub of asList(methodPath)) {
            found.set(`${RequestMethod[verb]} ${joinPath(base, sub)}`, access);
          }
        }
      }
    }
  }
  return found;
}

/** The OpenAPI document the app serves. */
export async function fetchOpenApiDocument(baseUrl: string): Promise<OpenApiDocument> {
  const res = await fetch(`${baseUrl}/docs/openapi.json`);
  if (res.status !== 200) throw new Error(`GET /docs/openapi.json answered ${res.status}`);
  return (await res.json()) as OpenApiDocument;
}
