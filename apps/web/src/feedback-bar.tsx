// Thumbs under a reply: rate it up or down (the pressed thumb again takes the rating back), then, if you like, say
// why in a comment. One rating per rater and reply (PUT …/nodes/:nodeId/feedback): a change replaces it.

import { useEffect, useState } from 'react';
import type { FeedbackRating, FeedbackView } from '@canopy/client';
import { errorText } from './format';

/** A thumb (up, or turned over for down), drawn so it shows whatever fonts the system has. */
function Thumb({ down = false }: { down?: boolean }) {
  return (
    <svg
      viewBox="0 0 24 24"
      width="16"
      height="16"
      aria-hidden="true"
      focusable="false"
      style={down ? { transform: 'rotate(180deg)' } : undefined}
    >
      <path
        fill="currentColor"
        d="M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z"
      />
    </svg>
  );
}

export function FeedbackBar({
  rating,
  onRate,
  onClear,
}: {
  /** The caller's own rating of the reply, or null. */
  rating: FeedbackView | null;
  onRate: (rating: FeedbackRating, comment: string | null) => Promise<FeedbackView>;
  onClear: () => Promise<void>;
}) {
  const [current, setCurrent] = useState<FeedbackView | null>(rating);
  const [comment, setComment] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => setCurrent(rating), [rating]);

  const act = async (work: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const thumb = (value: FeedbackRating) =>
    act(async () => {
      if (current?.rating === value) {
        await onClear();
        setCurrent(null);
        setComment(null);
      } else {
        setCurrent(await onRate(value, current?.comment ?? null));
        // A comment box opens after a rating, holding the comment so far.
        setComment(current?.comment ?? '');
      }
    });
  const save = () =>
    act(async () => {
      if (!current || comment === null) return;
      setCurrent(await onRate(current.rating, comment.trim() || null));
      setComment(null);
    });

  return (
    <div className="feedback" data-testid="feedback" data-rating={current?.rating ?? ''}>
      <button
        type="button"
        className="icon thumb"
        aria-pressed={current?.rating === 'up'}
        aria-label="Good reply"
        title="Good reply"
        disabled={busy}
        onClick={() => void thumb('up')}
        data-testid="feedback-up"
      >
        <Thumb />
      </button>
      <button
        type="button"
        className="icon thumb"
        aria-pressed={current?.rating === 'down'}
        aria-label="Bad reply"
        title="Bad reply"
        disabled={busy}
        onClick={() => void thumb('down')}
        data-testid="feedback-down"
      >
        <Thumb down />
      </button>
      {current && comment === null && (
        <>
          {current.comment && (
            <span className="muted feedback-comment-text" data-testid="feedback-comment-text">
              “{current.comment}”
            </span>
          )}
          <button
            type="button"
            className="link"
            onClick={() => setComment(current.comment ?? '')}
            data-testid="feedback-comment-open"
          >
            {current.comment ? 'Edit comment' : 'Add a comment'}
          </button>
        </>
      )}
      {current && comment !== null && (
        <form
          className="feedback-form"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <input
            type="text"
            value={comment}
            maxLength={4_000}
            placeholder={current.rating === 'up' ? 'What was good?' : 'What went wrong?'}
            aria-label="Comment on this reply"
            onChange={(e) => setComment(e.target.value)}
            data-testid="feedback-comment"
          />
          <button type="submit" disabled={busy} data-testid="feedback-save">
            Save
          </button>
          <button type="button" onClick={() => setComment(null)} data-testid="feedback-cancel">
            Cancel
          </button>
        </form>
      )}
      <span className="visually-hidden" role="status" data-testid="feedback-state">
        {current ? `Rated ${current.rating === 'up' ? 'good' : 'bad'}` : ''}
      </span>
      {error && (
        <span className="error" role="alert" data-testid="feedback-error">
          {error}
        </span>
      )}
    </div>
  );
}
