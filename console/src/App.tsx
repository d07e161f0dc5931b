import { lazy, Suspense, type ReactNode } from 'react';
import { BrowserRouter, Navigate, Route, Routes, useLocation } from 'react-router';
import { Layout } from './components/Layout.tsx';
import { Loading } from './components/Loading.tsx';
import { ApiKeysPage } from './pages/ApiKeysPage.tsx';
import { NotFoundPage } from './pages/NotFoundPage.tsx';
import { OverviewPage } from './pages/OverviewPage.tsx';
import { SecurityLogPage } from './pages/SecurityLogPage.tsx';
import { SetPasswordPage } from './pages/SetPasswordPage.tsx';
import { SignInPage } from './pages/SignInPage.tsx';
import { WebhooksPage } from './pages/WebhooksPage.tsx';
import { SessionProvider, useSession } from './session.tsx';

// GraphiQL is most of the bundle: only the explorer loads it.
const ExplorerPage = lazy(() => import('./pages/ExplorerPage.tsx'));

function RequireSession({ children }: { children: ReactNode }) {
  const { session } = useSession();
  const location = useLocation();
  if (session === undefined) return <Loading label="Loading the console" />;
  if (session === null) return <Navigate to="/sign-in" replace state={{ from: location.pathname }} />;
  return children;
}

export function App() {
  return (
    <SessionProvider>
      <BrowserRouter>
        <Routes>
          <Route path="/sign-in" element={<SignInPage />} />
          <Route path="/set-password" element={<SetPasswordPage />} />
          <Route
            element={
              <RequireSession>
                <Layout />
              </RequireSession>
            }
          >
            <Route index element={<OverviewPage />} />
            <Route path="settings/api-keys" element={<ApiKeysPage />} />
            <Route path="settings/security-log" element={<SecurityLogPage />} />
            <Route path="settings/webhooks" element={<WebhooksPage />} />
            <Route
              path="explorer"
              element={
                <Suspense fallback={<Loading label="Loading the API explorer" />}>
                  <ExplorerPage />
                </Suspense>
              }
            />
          </Route>
          <Route path="*" element={<NotFoundPage />} />
        </Routes>
      </BrowserRouter>
    </SessionProvider>
  );
}
