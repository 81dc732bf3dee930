// The intake's pure parts: the media type comes from the bytes (a declared type only picks among text types), and
// the meter refuses a stream the moment it passes its limit.

import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { FileMeter, fileNameOf, sniffMediaType } from './file-intake';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

describe('sniffMediaType', () => {
  it('believes the bytes, not the declared type', async () => {
    expect(await sniffMediaType(PNG, 'text/plain', 'notes.txt')).toBe('image/png');
    expect(await sniffMediaType(Buffer.from('%PDF-1.7\n%âãÏÓ\n'), 'image/png', 'x.png')).toBe(
      'application/pdf',
    );
  });

  it('takes text as the declared text type or by its extension, binary without a signature as octet-stream', async () => {
    expect(await sniffMediaType(Buffer.from('# Title\n'), null, 'readme.md')).toBe('text/markdown');
    expect(await sniffMediaType(Buffer.from('a,b\n1,2\n'), 'text/csv', 'data')).toBe('text/csv');
    expect(await sniffMediaType(Buffer.from('{"a":1}'), 'application/json', 'x')).toBe('application/json');
    expect(await sniffMediaType(Buffer.from('hello'), 'image/png', 'x')).toBe('text/plain');
    expect(await sniffMediaType(Buffer.from('<svg onload="x()"/>'), 'image/svg+xml', 'a.svg')).toBe(
      'text/plain',
    );
    expect(await sniffMediaType(Buffer.from([0, 1, 2, 255, 254]), 'text/plain', 'a.txt')).toBe(
      'application/octet-stream',
    );
  });
});

describe('FileMeter', () => {
  const sink = () => new Writable({ write: (_c, _e, cb) => cb() });

  it('counts and hashes what passes', async () => {
    const meter = new FileMeter({ maxBytes: 100, quotaBytesLeft: null });
    await pipeline(Readable.from([Buffer.from('hello '), Buffer.from('world')]), meter, sink());
    expect(meter.bytes).toBe(11);
    expect(meter.sha256()).toBe('b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9');
    expect(meter.firstBytes().toString()).toBe('hello world');
  });

  it('fails at the first chunk past the limit, without reading the rest', async () => {
    let pulled = 0;
    const endless = new Readable({
      read() {
        pulled++;
        this.push(Buffer.alloc(1_000));
      },
    });
    const meter = new FileMeter({ maxBytes: 2_500, quotaBytesLeft: null });
    await expect(pipeline(endless, meter, sink())).rejects.toMatchObject({ code: 'payload_too_large' });
    // What the streams buffer ahead (16 KiB), not the endless rest.
    expect(pulled).toBeLessThan(50);
  });

  it('answers quota_exceeded when the storage quota is the nearer limit', async () => {
    const meter = new FileMeter({ maxBytes: 10_000, quotaBytesLeft: 5 });
    await expect(pipeline(Readable.from([Buffer.alloc(6)]), meter, sink())).rejects.toMatchObject({
      code: 'quota_exceeded',
    });
  });
});

it('keeps a file name’s last path segment, without control characters', () => {
  expect(fileNameOf('C:\\Users\\me\\photo.png')).toBe('photo.png');
  expect(fileNameOf('../../etc/passwd')).toBe('passwd');
  expect(fileNameOf('a\u0000b\nc.txt')).toBe('abc.txt');
  expect(fileNameOf('   ')).toBe('file');
});
