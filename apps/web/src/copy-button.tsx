// A button that copies text to the clipboard and says so for a moment.

import { useEffect, useState } from 'react';

export function CopyButton({ text, label, testId }: { text: string; label: string; testId: string }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  useEffect(() => {
    if (copied === null) return;
    const timer = setTimeout(() => setCopied(null), 1_500);
    return () => clearTimeout(timer);
  }, [copied]);
  return (
    <button
      type="button"
      className="icon"
      // Once clicked, the name is what it shows ("Copied"): a label other than the visible text fails WCAG 2.5.3.
      aria-label={copied === null ? label : undefined}
      title={label}
      data-testid={testId}
      data-copied={copied ?? ''}
      onClick={() =>
        void navigator.clipboard.writeText(text).then(
          () => setCopied('yes'),
          () => setCopied('failed'),
        )
      }
    >
      {copied === 'yes' ? 'Copied' : copied === 'failed' ? 'Copy failed' : 'Copy'}
    </button>
  );
}
