import { useId, useRef, useState } from 'react';

/**
 * The full key, shown once. It lives in the state of the dialog that shows it: closing the dialog,
 * leaving or reloading the page loses it for good (the server keeps only its hash).
 */
export function NewKeyReveal({ apiKey }: { apiKey: string }) {
  const id = useId();
  const field = useRef<HTMLTextAreaElement>(null);
  const [copyNote, setCopyNote] = useState('');

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(apiKey);
      setCopyNote('Copied to the clipboard.');
    } catch {
      // No clipboard API outside a secure context: select the text for the owner to copy.
      field.current?.select();
      setCopyNote('Press Ctrl+C (⌘C on a Mac) to copy the selected key.');
    }
  };

  return (
    <div className="reveal">
      <label htmlFor={id}>New API key</label>
      <div className="copy-field">
        <textarea
          ref={field}
          id={id}
          className="mono"
          readOnly
          rows={2}
          value={apiKey}
          spellCheck={false}
          autoComplete="off"
          autoFocus
          aria-describedby={`${id}-warning`}
          onFocus={(event) => event.currentTarget.select()}
        />
        <button type="button" className="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p className="hint" aria-live="polite">
        {copyNote}
      </p>
      <p className="callout callout-warn" id={`${id}-warning`}>
        <strong>This key will not be shown again.</strong> Copy it now and keep it in an environment variable or a
        secret manager. If it is lost, roll the key to get a new one.
      </p>
    </div>
  );
}
