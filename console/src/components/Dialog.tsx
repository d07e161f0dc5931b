import { useEffect, useId, useRef, type ReactNode } from 'react';

const FIRST_CONTROL = '[data-autofocus], input:not([disabled]), select, textarea, button:not([disabled])';

/**
 * A modal built on the native <dialog>: the browser keeps focus inside it, closes it on Escape
 * and returns focus to the control that opened it. It opens on its first control, or on the one
 * marked `data-autofocus` (browsers differ on where showModal() puts focus).
 *
 * While `busy` (a request whose answer may be a credential shown only once), it stays open: closing
 * it would unmount the dialog, and the answer with it. Escape is refused; Chromium lets a repeated
 * close request through anyway (its guard against pages that trap the user), so a dialog closed
 * while busy opens again.
 */
export function Dialog({ title, onClose, children, wide, busy = false }: { title: string; onClose: () => void; children: ReactNode; wide?: boolean; busy?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const element = dialog.current;
    if (!element || element.open) return;
    element.showModal();
    element.querySelector<HTMLElement>(FIRST_CONTROL)?.focus();
  }, []);
  return (
    <dialog
      ref={dialog}
      className={`dialog${wide ? ' dialog-wide' : ''}`}
      aria-labelledby={titleId}
      aria-busy={busy}
      onCancel={(event) => {
        if (busy) event.preventDefault();
      }}
      onClose={(event) => {
        if (busy) event.currentTarget.showModal();
        else onClose();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      {children}
    </dialog>
  );
}

/** Closes the <dialog> around the element, which unmounts it through its onClose. */
export function closeDialogOf(element: HTMLElement | null): void {
  element?.closest('dialog')?.close();
}

/** A form dialog's buttons: Cancel closes it; both are disabled while the request runs (its answer is awaited, see Dialog). */
export function FormActions({ submitLabel, busy }: { submitLabel: string; busy: boolean }) {
  return (
    <div className="dialog-actions">
      <button type="button" className="button" disabled={busy} onClick={(event) => closeDialogOf(event.currentTarget)}>
        Cancel
      </button>
      <button type="submit" className="button button-primary" disabled={busy}>
        {submitLabel}
      </button>
    </div>
  );
}
