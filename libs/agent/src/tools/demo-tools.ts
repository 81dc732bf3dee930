// Built-in demo server tools, so approve / reject / progress can be tried without writing code: a clock, a
// calculator, and a pretend deployment that needs approval and reports its progress. Registered for every tenant
// when CANOPY_DEMO_TOOLS is on (the default of the single-process runtime); sessions enable them by name in
// `opts.serverTools`, like any server tool.

import { z } from 'zod';
import type { ServerTool } from './server-tool';
import type { ToolRegistry } from './tool-registry';
import { evaluateArithmetic } from './arithmetic';

export const DEMO_TOOL_NAMES = ['clock', 'calculator', 'deploy'] as const;

const clock: ServerTool<{ timeZone?: string | undefined }> = {
  name: 'clock',
  description: 'The current date and time, in UTC or in an IANA time zone (e.g. "Europe/Paris").',
  input: z.object({ timeZone: z.string().max(64).optional() }),
  handler: ({ timeZone }) => {
    const now = new Date();
    try {
      const local = now.toLocaleString('en-GB', { timeZone: timeZone ?? 'UTC', timeZoneName: 'short' });
      return { iso: now.toISOString(), timeZone: timeZone ?? 'UTC', local };
    } catch {
      return { content: `unknown time zone "${timeZone}"`, isError: true };
    }
  },
};

const calculator: ServerTool<{ expression: string }> = {
  name: 'calculator',
  description:
    'Evaluates an arithmetic expression: numbers, + - * / % ^ and parentheses (e.g. "(2 + 3) * 4 ^ 2").',
  input: z.object({ expression: z.string().min(1).max(500) }),
  handler: ({ expression }) => {
    const result = evaluateArithmetic(expression);
    return 'error' in result ? { content: result.error, isError: true } : { expression, value: result.value };
  },
};

const STEPS = ['building', 'testing', 'uploading', 'done'] as const;

const deploy: ServerTool<{ target: string }> = {
  name: 'deploy',
  description:
    'Pretends to deploy the app to a target (e.g. "staging"): needs approval, then reports its progress step by step.',
  input: z.object({ target: z.string().min(1).max(100) }),
  approval: true,
  handler: async ({ target }, turn) => {
    for (const [i, step] of STEPS.entries()) {
      turn.reportProgress({ step, percent: Math.round(((i + 1) / STEPS.length) * 100) });
      if (step !== 'done') await sleep(200, turn.signal);
    }
    return `deployed to ${target}`;
  },
};

export function registerDemoTools(registry: ToolRegistry): ToolRegistry {
  return registry.register(clock).register(calculator).register(deploy);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
