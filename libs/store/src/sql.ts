// Parameterised SQL for the raw node-postgres road: a tagged template whose interpolated values become $1, $2 ...
// placeholders (never text spliced into the statement) and whose nested fragments merge in, so a statement is
// assembled from conditional pieces the way Prisma.sql allows, without Prisma in the hot path.

import type { SqlTx } from './database';

export class Sql {
  /** The text around the values: always one more than values. */
  readonly strings: string[];
  readonly values: unknown[];

  constructor(strings: readonly string[], values: readonly unknown[]) {
    const merged = [strings[0] ?? ''];
    const bound: unknown[] = [];
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      const after = strings[i + 1] ?? '';
      if (value instanceof Sql) {
        merged[merged.length - 1] += value.strings[0] ?? '';
        for (let j = 0; j < value.values.length; j++) {
          bound.push(value.values[j]);
          merged.push(value.strings[j + 1] ?? '');
        }
        merged[merged.length - 1] += after;
      } else {
        bound.push(value);
        merged.push(after);
      }
    }
    this.strings = merged;
    this.values = bound;
  }

  /** The statement with $n placeholders, in the order of values. */
  get text(): string {
    let text = this.strings[0] ?? '';
    for (let i = 1; i < this.strings.length; i++) text += `$${i}${this.strings[i]}`;
    return text;
  }
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  return new Sql(strings, values);
}

/** Trusted text (column lists, keywords) that goes into the statement as is. Never user input. */
export function raw(text: string): Sql {
  return new Sql([text], []);
}

export const empty = raw('');

export function join(parts: readonly Sql[], separator: string): Sql {
  if (parts.length === 0) return empty;
  return new Sql(['', ...Array<string>(parts.length - 1).fill(separator), ''], parts);
}

/** Runs a fragment in the transaction and answers its rows. */
export function query<R>(tx: SqlTx, statement: Sql): Promise<R[]> {
  return tx.query<R>(statement.text, statement.values);
}
