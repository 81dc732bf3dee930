// Sizes as the tenant page shows a storage quota: the largest binary unit reached, the exact count beside it, and a
// limit entered in a unit turned into whole bytes.

import { byteSize, bytesOf, exactBytes, sizeWithBytes } from '../src/byte-size';

describe('byte sizes', () => {
  it('shows a size in the largest binary unit it reaches', () => {
    expect(byteSize(0)).toBe('0 bytes');
    expect(byteSize(1)).toBe('1 byte');
    expect(byteSize(1023)).toBe('1,023 bytes');
    expect(byteSize(1024)).toBe('1 KiB');
    expect(byteSize(1536)).toBe('1.5 KiB');
    expect(byteSize(1024 ** 2)).toBe('1 MiB');
    expect(byteSize(5 * 1024 ** 3 + 1)).toBe('5 GiB');
    expect(byteSize(1e15)).toBe('931322.57 GiB');
  });

  it('puts the exact count beside it', () => {
    expect(exactBytes(1_048_576)).toBe('1,048,576 bytes');
    expect(sizeWithBytes(900)).toBe('900 bytes');
    expect(sizeWithBytes(1536)).toBe('1.5 KiB (1,536 bytes)');
  });

  it('turns a limit entered in a unit into whole bytes, or null', () => {
    expect(bytesOf('1', 'MiB')).toBe(1_048_576);
    expect(bytesOf('1.5', 'KiB')).toBe(1536);
    expect(bytesOf('100', 'bytes')).toBe(100);
    expect(bytesOf('0.25', 'GiB')).toBe(268_435_456);
    for (const bad of ['', ' ', '0', '-1', 'abc', '0.1']) expect(bytesOf(bad, 'bytes')).toBeNull();
    expect(bytesOf('2000000', 'GiB')).toBeNull();
  });
});
