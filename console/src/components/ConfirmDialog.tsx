import { useState, type ReactNode } from 'react';
import { ApiError } from '../api.ts';
import { closeDialogOf, Dialog } from './Dialog.tsx';
import { ErrorCallout } from './ErrorCallout.tsx';

/** What a failed console call says to the owner: the server's own words, or a plain retry hint. */
export function failureText(failure: unknown): string {
  return failure instanceof ApiError ? failure.detail : 'Something went wrong. Try again.';
}

/**
 * Asks before something that cannot be undone (revoking a key, deleting an endpoint). Cancel has
 * the focus, so Enter does not destroy; the dialog stays open with the error if the action fails.
 */
export function ConfirmDialog({
  title,
  confirmLabel,
  onConfirm,
  onClose,
  children,
}: {
  title: string;
  confirmLabel: string;
  onConfirm(): Promise<void>;
  onClose(): void;
  children: ReactNode;
}) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const confirm = async (button: HTMLButtonElement) => {
    setBusy(true);
    setError(undefined);
    try {
      await onConfirm();
      closeDialogOf(button);
    } catch (failure) {
      setError(failureText(failure));
      setBusy(false);
    }
  };

  return (
    <Dialog title={title} onClose={onClose}>
      <p>{children}</p>
      <ErrorCallout message={error} />
      <div className="dialog-actions">
        <button type="button" className="button" data-autofocus onClick={(event) => closeDialogOf(event.currentTarget)}>
          Cancel
        </button>
        <button type="button" className="button button-danger" disabled={busy} onClick={(event) => confirm(event.currentTarget)}>
          {confirmLabel}
        </button>
      </div>
    </Dialog>
  );
}
