// Small display helpers shared by the pages.

import { isCanopyError, type Usage } from '@canopy/client';

export function errorText(err: unknown): string {
  if (isCanopyError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

export function shortJson(value: unknown, max = 120): string {
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function time(at: number | string): string {
  return new Date(at).toLocaleTimeString();
}

/** Date and time, for a message's hover details. */
export function dateTime(at: number | string): string {
  return new Date(at).toLocaleString([], { dateStyle: 'medium', timeStyle: 'medium' });
}

export function tokens(usage: Usage): string {
  return `${usage.inputTokens} in · ${usage.outputTokens} out tokens`;
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
