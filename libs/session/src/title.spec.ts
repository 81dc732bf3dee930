import { heuristicTitle, TITLE_MAX } from './title';

describe('heuristicTitle', () => {
  it('keeps a short prompt as is, whitespace collapsed', () => {
    expect(heuristicTitle('  Name three\n\tmountains  ')).toBe('Name three mountains');
  });

  it('keeps whole words up to 50 characters, then an ellipsis', () => {
    const title = heuristicTitle(
      'Please explain the difference between optimistic and pessimistic locking in databases',
    )!;
    expect(title).toBe('Please explain the difference between optimistic...');
    expect(title.length).toBeLessThanOrEqual(TITLE_MAX + 3);
  });

  it('cuts a single very long word hard', () => {
    const title = heuristicTitle('x'.repeat(80))!;
    expect(title).toBe(`${'x'.repeat(50)}...`);
  });

  it('gives null for a prompt with no text', () => {
    expect(heuristicTitle('   ')).toBeNull();
  });

  it('keeps exactly 50 characters uncut', () => {
    const text = 'a'.repeat(50);
    expect(heuristicTitle(text)).toBe(text);
  });
});
