import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { isPublicAddress, refusalOf } from './ssrf-guard';
import { backoffMs } from './webhook-dispatcher';
import { WebhookSender } from './webhook-sender';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.100.100.200',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    'not an address',
  ])('refuses %s', (address) => expect(isPublicAddress(address)).toBe(false));

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('accepts %s', (address) =>
    expect(isPublicAddress(address)).toBe(true),
  );
});

describe('refusalOf', () => {
  it('refuses literals and names that resolve to loopback; allows anything when allowed', async () => {
    expect(await refusalOf('http://127.0.0.1/x', false)).toContain('127.0.0.1');
    expect(await refusalOf('http://[::1]/x', false)).toContain('::1');
    expect(await refusalOf('http://localhost:8080/x', false)).toContain('resolves to');
    expect(await refusalOf('https://8.8.8.8/x', false)).toBeNull();
    expect(await refusalOf('http://127.0.0.1/x', true)).toBeNull();
  });
});

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
    url = `http://localhost:${(server.address() as AddressInfo).port}/hook`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;

  it('refuses at connection time a host that resolves to loopback (the request never arrives)', async () => {
    const result = await new WebhookSender({ timeoutMs: 2_000, allowPrivate: false }).send({
      url,
      secret,
      messageId: 'msg_1',
      body: '{"type":"x"}',
    });
    expect(result).toMatchObject({ ok: false, statusCode: null });
    expect(result.error).toContain('resolves to');
    expect(seen).toHaveLength(0);
  });

  it('sends a body a Standard Webhooks receiver verifies, when allowed', async () => {
    const result = await new WebhookSender({ timeoutMs: 2_000, allowPrivate: true }).send({
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
