import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { TargetPolicy } from '@canopy/common';
import { backoffMs } from './webhook-dispatcher';
import { WebhookSender } from './webhook-sender';

describe('backoffMs', () => {
  it('doubles from the base, within ±20 % jitter, capped at an hour', () => {
    expect(backoffMs(1, 1000, () => 0.5)).toBe(1000);
    expect(backoffMs(3, 1000, () => 0.5)).toBe(4000);
    expect(backoffMs(3, 1000, () => 0)).toBe(3200);
    expect(backoffMs(3, 1000, () => 1)).toBe(4800);
    expect(backoffMs(40, 1000, () => 0.5)).toBe(3_600_000);
  });
});

describe('WebhookSender against a real local server', () => {
  let server: Server;
  let url: string;
  let port: number;
  const seen: Array<{ headers: Record<string, string>; body: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString() });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    url = `http://localhost:${port}/hook`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;

  it('refuses at connection time a host that resolves to loopback (the request never arrives)', async () => {
    const result = await new WebhookSender({ timeoutMs: 2_000, targets: TargetPolicy.publicOnly }).send({
      url,
      secret,
      messageId: 'msg_1',
      body: '{"type":"x"}',
    });
    expect(result).toMatchObject({ ok: false, statusCode: null });
    expect(result.error).toBe(
      'webhook URL refused: localhost resolves to a loopback, private, link-local or reserved address',
    );
    expect(seen).toHaveLength(0);
  });

  it.each([`127.0.0.1`, `[::ffff:7f00:1]`, `[::1]`])(
    'refuses an address literal (%s) before connecting, where no lookup runs',
    async (host) => {
      const sender = new WebhookSender({ timeoutMs: 2_000, targets: TargetPolicy.publicOnly });
      const result = await sender.send({
        url: `http://${host}:${port}/hook`,
        secret,
        messageId: 'm',
        body: '{}',
      });
      expect(result).toMatchObject({ ok: false, statusCode: null });
      expect(result.error).toMatch(
        /^webhook URL refused: .+ is a loopback, private, link-local or reserved address$/,
      );
      expect(seen).toHaveLength(0);
    },
  );

  it('lets the operator allow an address (ALLOW_PRIVATE_TARGETS) without allowing its neighbours', async () => {
    const targets = TargetPolicy.allowing(['127.0.0.1']);
    const allowed = await new WebhookSender({ timeoutMs: 2_000, targets }).send({
      url: `http://127.0.0.1:${port}/hook`,
      secret,
      messageId: 'msg_allowed',
      body: '{"type":"x"}',
    });
    expect(allowed).toMatchObject({ ok: true, statusCode: 204 });
    const neighbour = await new WebhookSender({ timeoutMs: 2_000, targets }).send({
      url: `http://127.0.0.2:${port}/hook`,
      secret,
      messageId: 'msg_neighbour',
      body: '{"type":"x"}',
    });
    expect(neighbour.error).toContain('refused');
    expect(seen.map((s) => s.headers['webhook-id'])).toEqual(['msg_allowed']);
    seen.length = 0;
  });

  it('sends a body a Standard Webhooks receiver verifies, when allowed', async () => {
    const result = await new WebhookSender({ timeoutMs: 2_000, targets: TargetPolicy.anywhere }).send({
      url,
      secret,
      messageId: 'msg_2',
      body: '{"type":"x"}',
    });
    expect(result).toMatchObject({ ok: true, statusCode: 204, error: null });
    const [got] = seen;
    expect(got!.headers['webhook-id']).toBe('msg_2');
    expect(new Webhook(secret).verify(got!.body, got!.headers)).toEqual({ type: 'x' });
  });
});
