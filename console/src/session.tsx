import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError, createConsoleApi, type ConsoleApi, type Session } from './api.ts';

interface SessionState {
  /** undefined while the first look-up runs; null when signed out. */
  session: Session | null | undefined;
  /** Why the owner is looking at the sign-in page, when it was not their choice. */
  notice: string | undefined;
  signedIn(session: Session): void;
  signOut(): Promise<void>;
}

const SessionContext = createContext<SessionState | undefined>(undefined);
const ConsoleApiContext = createContext<ConsoleApi | undefined>(undefined);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [notice, setNotice] = useState<string>();
  const consoleApi = useMemo(
    () =>
      createConsoleApi(() => {
        setSession(null);
        setNotice('Your session has ended. Sign in again to continue.');
      }),
    [],
  );

  useEffect(() => {
    let current = true;
    consoleApi
      .session()
      .then((found) => current && setSession(found))
      .catch(() => current && setSession(null));
    return () => {
      current = false;
    };
  }, [consoleApi]);

  const signedIn = useCallback((next: Session) => {
    setNotice(undefined);
    setSession(next);
  }, []);

  // Signed out here only once the server has ended the session (or had none): a page that looked
  // signed out over a live session would leave it to the next person at the computer.
  const signOut = useCallback(async () => {
    try {
      await consoleApi.signOut();
    } catch (failure) {
      if (!(failure instanceof ApiError && failure.status === 401)) throw failure;
    }
    setNotice(undefined);
    setSession(null);
  }, [consoleApi]);

  const value = useMemo(() => ({ session, notice, signedIn, signOut }), [session, notice, signedIn, signOut]);
  return (
    <ConsoleApiContext.Provider value={consoleApi}>
      <SessionContext.Provider value={value}>{children}</SessionContext.Provider>
    </ConsoleApiContext.Provider>
  );
}

/** The console API, whose 401 on a signed-in request ends this provider's session. */
export function useConsoleApi(): ConsoleApi {
  const api = useContext(ConsoleApiContext);
  if (!api) throw new Error('useConsoleApi outside SessionProvider');
  return api;
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
