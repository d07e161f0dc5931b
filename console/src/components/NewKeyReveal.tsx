import { useId, useRef, useState, type ReactNode } from 'react';
import { closeDialogOf } from './Dialog.tsx';

/**
 * The full key, shown once, in the dialog that made it, after what the owner should know about it
 * (`children`). It lives in that dialog's state: "Done", Escape, leaving or reloading the page loses
 * it for good (the server keeps only its hash).
 */
export function NewKeyReveal({
  apiKey,
  children,
  label = 'New API key',
  warning = 'Copy it now and keep it in an environment variable or a secret manager. If it is lost, roll the key to get a new one.',
  notAgain = 'This key will not be shown again.',
}: {
  apiKey: string;
  children: ReactNode;
  /** The field's name: also shows a webhook's new signing secret. */
  label?: string;
  warning?: string;
  notAgain?: string;
}) {
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
      setCopyNote('Press Ctrl+C (⌘C on a Mac) to copy the selected text.');
    }
  };

  return (
    <div className="reveal">
      <p>{children}</p>
      <label htmlFor={id}>{label}</label>
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
        <strong>{notAgain}</strong> {warning}
      </p>
      <div className="dialog-actions">
        <button type="button" className="button button-primary" onClick={(event) => closeDialogOf(event.currentTarget)}>
          Done
        </button>
      </div>
    </div>
  );
}
