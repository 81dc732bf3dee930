import { tenantScope } from '@canopy/core';
import { evaluateArithmetic } from './arithmetic';
import { DEMO_TOOL_NAMES, registerDemoTools } from './demo-tools';
import { ToolRegistry } from './tool-registry';
import type { ToolTurn } from './server-tool';

describe('evaluateArithmetic', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['2 ^ 3 ^ 2', 512],
    ['-2 ^ 2', 4],
    ['10 / 4', 2.5],
    ['10 % 4', 2],
    ['1.5e2 + .5', 150.5],
    ['- (3 - 5)', 2],
  ])('%s = %d', (expression, value) => {
    expect(evaluateArithmetic(expression)).toEqual({ value });
  });

  it.each([
    ['', 'an empty expression'],
    ['1 +', 'the expression ends too early'],
    ['(1 + 2', 'a "(" is never closed'],
    ['1 / 0', 'division by zero'],
    ['2 ^ 10000', 'the result is not a finite number'],
    ['process.exit()', 'unexpected "p"'],
    ['1 2', 'unexpected "2"'],
  ])('refuses %j: %s', (expression, error) => {
    expect(evaluateArithmetic(expression)).toEqual({ error });
  });
});

it('refuses parentheses nested 200 deep', () => {
  expect(evaluateArithmetic('('.repeat(200) + '1' + ')'.repeat(200))).toEqual({
    error: 'too many nested parentheses',
  });
});

describe('demo tools', () => {
  const registry = registerDemoTools(new ToolRegistry());
  const progress: unknown[] = [];
  const turn: ToolTurn = {
    scope: tenantScope('t1'),
    sessionId: 's1',
    runId: 'r1',
    toolUseId: 'u1',
    toolCallId: 'u1',
    turnRef: 'r1:0',
    step: 0,
    userMessage: null,
    context: [],
    injections: [],
    assistantMessage: null,
    signal: new AbortController().signal,
    reportProgress: (p) => progress.push(p),
  };

  it('registers a clock, a calculator and a deploy that needs approval', () => {
    expect(registry.names()).toEqual([...DEMO_TOOL_NAMES].sort());
    expect(registry.get('deploy')!.approval).toBe(true);
    expect(registry.get('clock')!.approval).toBeFalsy();
    expect(registry.spec('calculator').inputSchema).toMatchObject({
      properties: { expression: { type: 'string' } },
    });
  });

  it('tells the time, in a time zone too, and refuses an unknown zone', async () => {
    const utc = (await registry.get('clock')!.handler({}, turn)) as { iso: string; timeZone: string };
    expect(Math.abs(Date.parse(utc.iso) - Date.now())).toBeLessThan(5_000);
    expect(utc.timeZone).toBe('UTC');
    expect(await registry.get('clock')!.handler({ timeZone: 'Europe/Paris' }, turn)).toMatchObject({
      timeZone: 'Europe/Paris',
    });
    expect(await registry.get('clock')!.handler({ timeZone: 'Mars/Olympus' }, turn)).toMatchObject({
      isError: true,
    });
  });

  it('calculates, and answers an error result for a bad expression', async () => {
    expect(await registry.get('calculator')!.handler({ expression: '6 * 7' }, turn)).toEqual({
      expression: '6 * 7',
      value: 42,
    });
    expect(await registry.get('calculator')!.handler({ expression: '6 *' }, turn)).toMatchObject({
      isError: true,
    });
  });

  it('deploys, reporting each step', async () => {
    progress.length = 0;
    expect(await registry.get('deploy')!.handler({ target: 'staging' }, turn)).toBe('deployed to staging');
    expect(progress.map((p) => (p as { step: string }).step)).toEqual([
      'building',
      'testing',
      'uploading',
      'done',
    ]);
  });
});
