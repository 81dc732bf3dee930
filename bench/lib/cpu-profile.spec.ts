import { summariseProfile, type CpuProfile, type ProfileNode } from './cpu-profile';

/** A profile of the given stacks (outermost frame first), each sampled `count` times, 1 ms apart. */
function profileOf(stacks: Array<{ frames: Array<[string, string]>; count: number }>): CpuProfile {
  const nodes: ProfileNode[] = [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [] },
  ];
  const samples: number[] = [];
  for (const { frames, count } of stacks) {
    let at = nodes[0]!;
    for (const [functionName, url] of frames) {
      let child = (at.children ?? [])
        .map((id) => nodes.find((n) => n.id === id)!)
        .find((n) => n.callFrame.functionName === functionName && n.callFrame.url === url);
      if (!child) {
        child = { id: nodes.length + 1, callFrame: { functionName, url, lineNumber: 0 }, children: [] };
        nodes.push(child);
        at.children!.push(child.id);
      }
      at = child;
    }
    for (let i = 0; i < count; i++) samples.push(at.id);
  }
  return { startTime: 0, nodes, samples, timeDeltas: samples.map(() => 1_000) };
}

const ENGINE = 'file:///app/dist/apps/api/libs/session/src/live-session.js';
const PG = 'file:///app/node_modules/pg/lib/client.js';
const EXPRESS = 'file:///app/node_modules/express/lib/response.js';
const HTTP = 'node:_http_server';

const layers = [
  { name: 'engine', frames: /\/libs\/session\/|node_modules\/pg\// },
  { name: 'http', frames: /^node:_http|node_modules\/express\// },
];

describe('summariseProfile by layer', () => {
  const profile = profileOf([
    // The engine called by the HTTP stack counts as the engine's, its socket write included.
    {
      frames: [
        ['parserOnIncoming', HTTP],
        ['prompt', ENGINE],
        ['query', PG],
        ['writev', ''],
      ],
      count: 30,
    },
    {
      frames: [
        ['parserOnIncoming', HTTP],
        ['prompt', ENGINE],
      ],
      count: 10,
    },
    // The HTTP stack alone: a response and its write.
    {
      frames: [
        ['parserOnIncoming', HTTP],
        ['send', EXPRESS],
        ['writev', ''],
      ],
      count: 20,
    },
    {
      frames: [
        ['parserOnIncoming', HTTP],
        ['send', EXPRESS],
      ],
      count: 20,
    },
    // Neither: the collector, and idle samples, which count in no layer.
    { frames: [['(garbage collector)', '']], count: 20 },
    { frames: [['(idle)', '']], count: 100 },
  ]);

  it('gives each busy sample to the first layer with a frame on its stack, and the rest to other', () => {
    const summary = summariseProfile(profile, 0, 5, layers);
    expect(summary.busyPercent).toBeCloseTo(50);
    expect(summary.layers).toEqual([
      { name: 'engine', percent: 40, socketWritesPercent: 75 },
      { name: 'http', percent: 40, socketWritesPercent: 50 },
      { name: 'other (GC, runtime)', percent: 20, socketWritesPercent: 0 },
    ]);
  });

  it('skips the samples before skipMs and splits nothing without layers', () => {
    // The engine's 40 samples are taken at 1 to 40 ms; the next ones from 41 ms on.
    const skipped = summariseProfile(profile, 41, 5, layers);
    expect(skipped.layers.map((l) => [l.name, l.percent])).toEqual([
      ['http', (100 * 40) / 60],
      ['other (GC, runtime)', (100 * 20) / 60],
    ]);
    expect(summariseProfile(profile, 0, 5).layers).toEqual([]);
  });
});
