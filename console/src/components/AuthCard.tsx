import type { ReactNode } from 'react';
import { Logo } from './Logo.tsx';
import { useDocumentTitle } from './PageHeader.tsx';

/** The frame of the pages seen before signing in. */
export function AuthCard({ title, intro, children }: { title: string; intro?: ReactNode; children: ReactNode }) {
  useDocumentTitle(title);
  return (
    <main className="auth">
      <div className="auth-card">
        <Logo />
        <h1>{title}</h1>
        {intro && <p className="auth-intro">{intro}</p>}
        {children}
      </div>
      <p className="auth-footer">Order Trading GraphQL Service · account console</p>
    </main>
  );
}
