import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { consoleApi, whenSignedOut, type Session } from './api.ts';

interface SessionState {
  /** undefined while the first look-up runs; null when signed out. */
  session: Session | null | undefined;
  /** Why the owner is looking at the sign-in page, when it was not their choice. */
  notice: string | undefined;
  signedIn(session: Session): void;
  signOut(): Promise<void>;
}

const SessionContext = createContext<SessionState | undefined>(undefined);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [notice, setNotice] = useState<string>();

  useEffect(() => {
    let current = true;
    consoleApi
      .session()
      .then((found) => current && setSession(found))
      .catch(() => current && setSession(null));
    whenSignedOut(() => {
      setSession(null);
      setNotice('Your session has ended. Sign in again to continue.');
    });
    return () => {
      current = false;
    };
  }, []);

  const signedIn = useCallback((next: Session) => {
    setNotice(undefined);
    setSession(next);
  }, []);

  const signOut = useCallback(async () => {
    try {
      await consoleApi.signOut();
    } finally {
      setNotice(undefined);
      setSession(null);
    }
  }, []);

  const value = useMemo(() => ({ session, notice, signedIn, signOut }), [session, notice, signedIn, signOut]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSession outside SessionProvider');
  return state;
}

/** The signed-in owner and account; only for pages behind RequireSession. */
export function useSignedIn(): Session {
  const { session } = useSession();
  if (!session) throw new Error('useSignedIn without a session');
  return session;
}
