import { useEffect, useId, useRef, type ReactNode } from 'react';

/**
 * A modal built on the native <dialog>: the browser traps focus inside it, closes it on Escape
 * and returns focus to the control that opened it.
 */
export function Dialog({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ReactNode; wide?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    if (!dialog.current?.open) dialog.current?.showModal();
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
