// Titles for untitled sessions, from their first prompt (a heuristic, no model call): whitespace collapsed, then
// whole words up to 50 characters followed by "..." when something was cut (a single longer word is cut hard).

export const TITLE_MAX = 50;

export function heuristicTitle(text: string, max = TITLE_MAX): string | null {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  if (collapsed === '') return null;
  if (collapsed.length <= max) return collapsed;
  let kept = '';
  for (const word of collapsed.split(' ')) {
    const candidate = kept === '' ? word : `${kept} ${word}`;
    if (candidate.length > max) {
      if (kept === '') kept = word.slice(0, max);
      break;
    }
    kept = candidate;
  }
  return `${kept}...`;
}
