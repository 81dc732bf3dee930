// Small display helpers shared by the pages.

import { isCanopyError } from '@canopy/client';

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
