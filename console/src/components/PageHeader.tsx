import { useEffect, useRef, type ReactNode } from 'react';

export function useDocumentTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Order Trading console`;
  }, [title]);
}

/**
 * The page's h1, which takes focus when the page opens so that a screen reader announces where a
 * navigation landed and the keyboard continues from the page's top.
 */
export function PageHeader({ title, eyebrow, children }: { title: string; eyebrow?: string; children?: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useDocumentTitle(title);
  useEffect(() => heading.current?.focus({ preventScroll: true }), []);
  return (
    <header className="page-header">
      <div>
        {eyebrow && <p className="eyebrow">{eyebrow}</p>}
        <h1 ref={heading} tabIndex={-1}>
          {title}
        </h1>
      </div>
      {children && <div className="page-actions">{children}</div>}
    </header>
  );
}
