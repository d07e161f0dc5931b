import { useEffect, useId, useRef, type ReactNode } from 'react';

const FIRST_CONTROL = '[data-autofocus], input:not([disabled]), select, textarea, button:not([disabled])';

/**
 * A modal built on the native <dialog>: the browser keeps focus inside it, closes it on Escape
 * and returns focus to the control that opened it. It opens on its first control, or on the one
 * marked `data-autofocus` (browsers differ on where showModal() puts focus).
 */
export function Dialog({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ReactNode; wide?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const element = dialog.current;
    if (!element || element.open) return;
    element.showModal();
    element.querySelector<HTMLElement>(FIRST_CONTROL)?.focus();
  }, []);
  return (
    <dialog ref={dialog} className={`dialog${wide ? ' dialog-wide' : ''}`} aria-labelledby={titleId} onClose={onClose}>
      <h2 id={titleId}>{title}</h2>
      {children}
    </dialog>
  );
}

/** Closes the <dialog> around the element, which unmounts it through its onClose. */
export function closeDialogOf(element: HTMLElement | null): void {
  element?.closest('dialog')?.close();
}

/** A form dialog's buttons: Cancel closes it, the submit button is disabled while the request runs. */
export function FormActions({ submitLabel, busy }: { submitLabel: string; busy: boolean }) {
  return (
    <div className="dialog-actions">
      <button type="button" className="button" onClick={(event) => closeDialogOf(event.currentTarget)}>
        Cancel
      </button>
      <button type="submit" className="button button-primary" disabled={busy}>
        {submitLabel}
      </button>
    </div>
  );
}
