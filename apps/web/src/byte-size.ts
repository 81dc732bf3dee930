// Sizes in bytes as people read them (an attachment's chip, a storage quota's limit and usage): the largest binary unit a size reaches
// (KiB, MiB, GiB: powers of 1024) beside the exact count, and a limit entered as a number of one of those units.

export const BYTE_UNITS = [
  { unit: 'bytes', size: 1 },
  { unit: 'KiB', size: 1024 },
  { unit: 'MiB', size: 1024 ** 2 },
  { unit: 'GiB', size: 1024 ** 3 },
] as const;

export type ByteUnit = (typeof BYTE_UNITS)[number]['unit'];

/** The API's largest quota limit. */
const MAX_BYTES = 1e15;

/** 1536 → "1.5 KiB", 1048576 → "1 MiB", 12 → "12 bytes" (at most two decimals). */
export function byteSize(bytes: number): string {
  const unit = [...BYTE_UNITS].reverse().find((u) => bytes >= u.size) ?? BYTE_UNITS[0];
  if (unit.size === 1) return exactBytes(bytes);
  return `${Number((bytes / unit.size).toFixed(2))} ${unit.unit}`;
}

/** The exact count, grouped: 1048576 → "1,048,576 bytes". */
export function exactBytes(bytes: number): string {
  return `${bytes.toLocaleString('en-US')} ${bytes === 1 ? 'byte' : 'bytes'}`;
}

/** A size in both forms: "1.5 KiB (1,536 bytes)", or "12 bytes" below a KiB. */
export function sizeWithBytes(bytes: number): string {
  return bytes < 1024 ? exactBytes(bytes) : `${byteSize(bytes)} (${exactBytes(bytes)})`;
}

/** A limit entered as a number of a unit, in whole bytes; null when it is no size a quota can take. */
export function bytesOf(value: string, unit: ByteUnit): number | null {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) return null;
  const bytes = Math.round(n * BYTE_UNITS.find((u) => u.unit === unit)!.size);
  return bytes >= 1 && bytes <= MAX_BYTES ? bytes : null;
}
