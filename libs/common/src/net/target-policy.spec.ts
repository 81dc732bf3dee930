import { isPublicAddress, parseAllowList, TargetPolicy } from './target-policy';

/** Every spelling of a non-public address the guard meets: as resolved or as the URL parser leaves a host. */
const REFUSED = [
  ['loopback', '127.0.0.1'],
  ['loopback, not the first', '127.255.0.9'],
  ['unspecified', '0.0.0.0'],
  ['this network', '0.1.2.3'],
  ['private 10/8', '10.0.0.1'],
  ['private 172.16/12', '172.16.5.4'],
  ['private 172.16/12, last', '172.31.255.255'],
  ['private 192.168/16', '192.168.1.1'],
  ['link-local (cloud metadata)', '169.254.169.254'],
  ['carrier-grade NAT', '100.64.0.1'],
  ['carrier-grade NAT (Alibaba metadata)', '100.100.100.200'],
  ['IETF protocol assignments', '192.0.0.1'],
  ['documentation', '192.0.2.1'],
  ['benchmarking', '198.18.0.1'],
  ['multicast', '224.0.0.1'],
  ['reserved', '240.0.0.1'],
  ['broadcast', '255.255.255.255'],
  ['IPv6 loopback', '::1'],
  ['IPv6 unspecified', '::'],
  ['IPv6 link-local', 'fe80::1'],
  ['IPv6 link-local with a zone', 'fe80::1%eth0'],
  ['unique-local', 'fd00::1'],
  ['unique-local (AWS metadata)', 'fd00:ec2::254'],
  ['IPv6 multicast', 'ff02::1'],
  ['IPv6 documentation', '2001:db8::1'],
  ['IPv6 discard', '100::1'],
  ['IPv4-mapped loopback, dotted', '::ffff:127.0.0.1'],
  ['IPv4-mapped loopback, hex', '::ffff:7f00:1'],
  ['IPv4-mapped private', '::ffff:10.0.0.1'],
  ['IPv4-mapped metadata', '::ffff:a9fe:a9fe'],
  ['IPv4-compatible loopback', '::7f00:1'],
  ['IPv4-compatible public', '::8.8.8.8'],
  ['IPv4-translated', '::ffff:0:7f00:1'],
  ['NAT64', '64:ff9b::7f00:1'],
  ['NAT64 local use', '64:ff9b:1::1'],
  ['6to4', '2002:7f00:1::'],
  ['Teredo', '2001::1'],
  ['decimal IPv4', '2130706433'],
  ['hex IPv4', '0x7f000001'],
  ['dotted hex IPv4', '0x7f.0.0.1'],
  ['octal IPv4', '0177.0.0.1'],
  ['short IPv4', '127.1'],
  ['not an address', 'localhost'],
  ['empty', ''],
] as const;

describe('isPublicAddress', () => {
  it.each(REFUSED)('refuses %s (%s)', (_kind, address) => expect(isPublicAddress(address)).toBe(false));

  it.each(['93.184.215.14', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2a00:1450::1'])(
    'accepts %s',
    (address) => expect(isPublicAddress(address)).toBe(true),
  );
});

describe('parseAllowList (ALLOW_PRIVATE_TARGETS)', () => {
  it('reads hosts, addresses, CIDR ranges and *, comma-separated, spaces and empty entries ignored', () => {
    expect(parseAllowList(' llm.internal , 10.0.0.5,10.1.0.0/16,,fd00::/8, [::1], * ')).toEqual({
      entries: ['llm.internal', '10.0.0.5', '10.1.0.0/16', 'fd00::/8', '[::1]', '*'],
    });
    expect(parseAllowList('')).toEqual({ entries: [] });
  });

  it.each([
    'http://llm.internal',
    'llm.internal:8080',
    '10.0.0.0/33',
    'fd00::/129',
    '10.0.0.0/x',
    'not a host',
    '2130706433',
    '0x7f000001',
    '127.1',
    '*.internal',
  ])('names the entry "%s" as a problem', (entry) => {
    const parsed = parseAllowList(`localhost,${entry}`);
    expect(parsed).toEqual({ problems: [expect.stringContaining(`"${entry}"`)] });
  });
});

describe('TargetPolicy', () => {
  it('public only: public addresses, no host by name', () => {
    const p = TargetPolicy.publicOnly;
    expect(p.allowsAll).toBe(false);
    expect(p.allowsAddress('8.8.8.8')).toBe(true);
    for (const [, address] of REFUSED) expect(p.allowsAddress(address)).toBe(false);
    expect(p.allowsHost('localhost')).toBe(false);
  });

  it('* allows every address and host', () => {
    const p = TargetPolicy.allowing(['10.0.0.1', '*']);
    expect(p.allowsAll).toBe(true);
    for (const [, address] of REFUSED) if (address) expect(p.allowsAddress(address)).toBe(true);
    expect(p.allowsHost('anything.internal')).toBe(true);
  });

  it('an address allows that address only, in every spelling of it', () => {
    const p = TargetPolicy.allowing(['127.0.0.1']);
    for (const spelling of ['127.0.0.1', '::ffff:127.0.0.1', '::ffff:7f00:1', '2130706433', '0x7f.0.0.1'])
      expect(p.allowsAddress(spelling)).toBe(true);
    for (const other of ['127.0.0.2', '::1', '10.0.0.1', '169.254.169.254'])
      expect(p.allowsAddress(other)).toBe(false);
    expect(p.allowsHost('localhost')).toBe(false);
  });

  it('CIDR ranges allow their addresses, IPv4 and IPv6', () => {
    const p = TargetPolicy.allowing(['10.1.0.0/16', 'fd00:1::/32', '[::1]']);
    expect(p.allowsAddress('10.1.200.3')).toBe(true);
    expect(p.allowsAddress('::ffff:10.1.0.9')).toBe(true);
    expect(p.allowsAddress('10.2.0.1')).toBe(false);
    expect(p.allowsAddress('fd00:1:ffff::9')).toBe(true);
    expect(p.allowsAddress('fd00:2::9')).toBe(false);
    expect(p.allowsAddress('::1')).toBe(true);
    expect(p.allowsAddress('127.0.0.1')).toBe(false);
  });

  it('a host allows that name (case and a trailing dot aside), not its addresses nor other names', () => {
    const p = TargetPolicy.allowing(['LLM.internal']);
    expect(p.allowsHost('llm.internal')).toBe(true);
    expect(p.allowsHost('llm.internal.')).toBe(true);
    expect(p.allowsHost('Llm.Internal')).toBe(true);
    expect(p.allowsHost('evil.llm.internal')).toBe(false);
    expect(p.allowsHost('localhost')).toBe(false);
    expect(p.allowsAddress('10.0.0.1')).toBe(false);
  });

  it('refuses to build from an entry that is not one', () => {
    expect(() => TargetPolicy.allowing(['10.0.0.0/40'])).toThrow('"10.0.0.0/40"');
  });
});
