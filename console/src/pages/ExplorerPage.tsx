import { GraphiQL } from 'graphiql';
import 'graphiql/style.css';
import { useEffect, useMemo, useState, type ComponentProps } from 'react';
import { Field } from '../components/Field.tsx';
import { PageHeader } from '../components/PageHeader.tsx';

type Fetcher = ComponentProps<typeof GraphiQL>['fetcher'];

const DEFAULT_QUERY = `# Run with Ctrl+Enter or ▶
{
  viewer {
    account {
      name
    }
  }
}
`;

/**
 * GraphiQL keeps its tabs, history and settings in this Storage instead of localStorage: nothing
 * typed into the explorer outlives the page. (Its headers editor is off: the key goes in "API key".)
 */
function memoryStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    key: (index) => [...items.keys()][index] ?? null,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, String(value)),
    removeItem: (key) => void items.delete(key),
    clear: () => items.clear(),
  };
}

/** Sends each operation to /graphql with the key as X-API-Key; without a key it explains instead of calling. */
function keyFetcher(apiKey: string): Fetcher {
  return async (params) => {
    if (!apiKey) return { errors: [{ message: 'Paste an API key into "API key" above the editor to run queries.' }] };
    const response = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify(params),
    });
    return response.json();
  };
}

export default function ExplorerPage() {
  const [typed, setTyped] = useState('');
  // Pausing before using what was typed keeps a half-typed key from being sent (and counted as a failure).
  const [apiKey, setApiKey] = useState('');
  useEffect(() => {
    const timer = setTimeout(() => setApiKey(typed.trim()), 400);
    return () => clearTimeout(timer);
  }, [typed]);
  const fetcher = useMemo(() => keyFetcher(apiKey), [apiKey]);
  const storage = useMemo(memoryStorage, []);

  return (
    <div className="explorer">
      <PageHeader title="API explorer" />
      <div className="explorer-key">
        <Field
          label="API key"
          hint="Runs queries as the key's account. The key stays in this page's memory: it is not saved, and leaving or reloading the page forgets it."
        >
          {(props) => (
            <input
              {...props}
              className="mono"
              type="text"
              autoComplete="off"
              spellCheck={false}
              placeholder="svc_live_…"
              value={typed}
              onChange={(event) => setTyped(event.target.value)}
            />
          )}
        </Field>
      </div>
      <div className="explorer-ide">
        <GraphiQL
          fetcher={fetcher}
          storage={storage}
          defaultQuery={DEFAULT_QUERY}
          isHeadersEditorEnabled={false}
          shouldPersistHeaders={false}
          forcedTheme="light"
        />
      </div>
    </div>
  );
}
