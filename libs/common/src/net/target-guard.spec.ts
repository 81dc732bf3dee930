import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CanopyException } from '../errors/canopy.exception';
import {
  assertTargetAllowed,
  guardedFetch,
  literalRefusal,
  TargetRefusedError,
  targetRefusalIn,
  urlRefusal,
} from './target-guard';
import { TargetPolicy } from './target-policy';

const KINDS = 'a loopback, private, link-local or reserved address';

describe('urlRefusal (at save)', () => {
  it.each([
    ['http://127.0.0.1/x', '127.0.0.1'],
    ['http://2130706433/x', '127.0.0.1'],
    ['http://0x7f000001/x', '127.0.0.1'],
    ['http://0x7f.0.0.1/x', '127.0.0.1'],
    ['http://0177.0.0.1/x', '127.0.0.1'],
    ['http://127.1/x', '127.0.0.1'],
    ['http://0.0.0.0/x', '0.0.0.0'],
    ['http://0/x', '0.0.0.0'],
    ['http://169.254.169.254/latest', '169.254.169.254'],
    ['http://[::1]/x', '::1'],
    ['http://[::]/x', '::'],
    ['http://[::ffff:127.0.0.1]/x', '::ffff:7f00:1'],
    ['http://[::ffff:7f00:1]/x', '::ffff:7f00:1'],
    ['http://[::127.0.0.1]/x', '::7f00:1'],
    ['http://[fe80::1]/x', 'fe80::1'],
    ['http://[fd00::1]/x', 'fd00::1'],
    ['http://[64:ff9b::7f00:1]/x', '64:ff9b::7f00:1'],
    ['http://[2002:7f00:1::]/x', '2002:7f00:1::'],
    ['https://10.0.0.1/x', '10.0.0.1'],
    ['https://100.64.0.1/x', '100.64.0.1'],
  ])('refuses %s, naming %s', async (url, host) => {
    expect(await urlRefusal(url, TargetPolicy.publicOnly)).toBe(`${host} is ${KINDS}`);
  });

  it('refuses a name that resolves to loopback, without saying to what', async () => {
    expect(await urlRefusal('http://localhost:8080/x', TargetPolicy.publicOnly)).toBe(
      `localhost resolves to ${KINDS}`,
    );
  });

  it('accepts public addresses, names that do not resolve (checked again at connect), other schemes', async () => {
    expect(await urlRefusal('https://8.8.8.8/x', TargetPolicy.publicOnly)).toBeNull();
    expect(await urlRefusal('https://[2606:4700:4700::1111]/x', TargetPolicy.publicOnly)).toBeNull();
    expect(await urlRefusal('https://no-such-host.invalid/x', TargetPolicy.publicOnly)).toBeNull();
    expect(await urlRefusal('data:text/plain;base64,aGk=', TargetPolicy.publicOnly)).toBeNull();
  });

  it('accepts what the operator allows: everything, a name, an address, a range', async () => {
    expect(await urlRefusal('http://127.0.0.1/x', TargetPolicy.anywhere)).toBeNull();
    expect(await urlRefusal('http://localhost/x', TargetPolicy.allowing(['localhost']))).toBeNull();
    expect(await urlRefusal('http://2130706433/x', TargetPolicy.allowing(['127.0.0.1']))).toBeNull();
    expect(await urlRefusal('http://10.9.8.7/x', TargetPolicy.allowing(['10.0.0.0/8']))).toBeNull();
    expect(await urlRefusal('http://10.9.8.7/x', TargetPolicy.allowing(['10.0.0.0/16']))).not.toBeNull();
  });

  it('assertTargetAllowed answers 400 bad_request naming the field', async () => {
    const error = await assertTargetAllowed(
      'http://[::1]/v1',
      TargetPolicy.publicOnly,
      'baseUrl',
      'provider baseUrl',
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CanopyException);
    expect(error).toMatchObject({ code: 'bad_request', details: { field: 'baseUrl' } });
    expect((error as Error).message).toMatch(/^provider baseUrl refused: ::1 is a loopback/);
    await expect(
      assertTargetAllowed('https://8.8.8.8/', TargetPolicy.publicOnly, 'url', 'webhook URL'),
    ).resolves.toBeUndefined();
  });
});

describe('literalRefusal', () => {
  it('judges address literals (bracketed or not) and leaves names to the lookup', () => {
    expect(literalRefusal('127.0.0.1', TargetPolicy.publicOnly)).toBe(`127.0.0.1 is ${KINDS}`);
    expect(literalRefusal('[::1]', TargetPolicy.publicOnly)).toBe(`::1 is ${KINDS}`);
    expect(literalRefusal('::ffff:7f00:1', TargetPolicy.publicOnly)).toBe(`::ffff:7f00:1 is ${KINDS}`);
    expect(literalRefusal('8.8.8.8', TargetPolicy.publicOnly)).toBeNull();
    expect(literalRefusal('localhost', TargetPolicy.publicOnly)).toBeNull();
    expect(literalRefusal('127.0.0.1', TargetPolicy.allowing(['127.0.0.0/8']))).toBeNull();
  });
});

describe('guardedFetch against a real local server', () => {
  let server: Server;
  let port: number;
  let hits = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits++;
      if (req.url === '/redirect') res.writeHead(302, { location: `http://127.0.0.1:${port}/ok` }).end();
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it.each(['127.0.0.1', 'localhost', '[::ffff:7f00:1]', '2130706433', '0x7f.0.0.1', '127.1'])(
    'refuses http://%s:PORT before anything is sent, as "<label> refused"',
    async (host) => {
      const before = hits;
      const fetch = guardedFetch(TargetPolicy.publicOnly, 'model provider URL');
      const error = await fetch(`http://${host}:${port}/ok`).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TargetRefusedError);
      expect((error as Error).message).toMatch(
        /^model provider URL refused: \S+ (is|resolves to) a loopback/,
      );
      expect(targetRefusalIn(new Error('wrapped', { cause: error }))).toBe(error);
      expect(hits).toBe(before);
    },
  );

  it('connects where the operator allows, and does not follow redirects', async () => {
    const fetch = guardedFetch(TargetPolicy.allowing(['127.0.0.1']), 'x');
    const ok = await fetch(`http://127.0.0.1:${port}/ok`);
    expect({ status: ok.status, body: await ok.text() }).toEqual({ status: 200, body: 'ok' });
    const before = hits;
    const redirect = await fetch(`http://127.0.0.1:${port}/redirect`);
    expect(redirect.status).toBe(302);
    expect(hits).toBe(before + 1);
    // By name: localhost resolves to 127.0.0.1 (and maybe ::1, which this policy does not allow).
    const byName = await guardedFetch(
      TargetPolicy.allowing(['localhost']),
      'x',
    )(`http://localhost:${port}/ok`);
    expect(byName.status).toBe(200);
  });
});
