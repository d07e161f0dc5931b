import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import { GraphQLError } from 'graphql';
import 'graphiql/style.css';
import './explorer.css';
import { useEffect, useRef, useState, type ComponentProps } from 'react';
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

# Streams the account's events as they happen (GraphQL over WebSocket); stop it with ■
# subscription {
#   events { cursor event { type occurredAt data } }
# }
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

/** The gateway's GraphQL over WebSocket endpoint, on the console's own origin. */
function webSocketUrl(): string {
  return `${window.location.protocol === 'https:' ? 'wss' : 'ws'}://${window.location.host}/graphql/ws`;
}

/**
 * Queries and mutations go to /graphql with the key as X-API-Key; subscriptions (the `events`
 * stream) to /graphql/ws, the key in the connection_init payload since a browser cannot set headers
 * on a WebSocket. Without a key it explains instead of calling.
 */
function keyFetcher(currentKey: () => string): Fetcher {
  const fetcher = createGraphiQLFetcher({
    url: '/graphql',
    subscriptionUrl: webSocketUrl(),
    wsConnectionParams: () => ({ 'X-API-Key': currentKey() }),
    enableIncrementalDelivery: false,
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), 'x-api-key': currentKey() } }),
  });
  return (params, options) => {
    if (!currentKey()) return { errors: [new GraphQLError('Paste an API key into "API key" above the editor to run queries.')] };
    return fetcher(params, options);
  };
}

export default function ExplorerPage() {
  const [typed, setTyped] = useState('');
  const apiKey = useRef('');
  // A new fetcher makes GraphiQL load the schema again: only once typing pauses, so that a half-typed
  // key is not sent (and counted as a failed authentication). Queries always use the key as it is now.
  const newFetcher = (): Fetcher => keyFetcher(() => apiKey.current);
  // The fetcher reads the ref only when GraphiQL sends an operation, never while rendering.
  // eslint-disable-next-line react-hooks/refs
  const [schema, setSchema] = useState(() => ({ key: '', fetcher: newFetcher() }));
  useEffect(() => {
    const timer = setTimeout(() => {
      const key = typed.trim();
      setSchema((current) => (current.key === key ? current : { key, fetcher: newFetcher() }));
    }, 400);
    return () => clearTimeout(timer);
  }, [typed]);
  const [storage] = useState(memoryStorage);

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
              onChange={(event) => {
                setTyped(event.target.value);
                apiKey.current = event.target.value.trim();
              }}
            />
          )}
        </Field>
      </div>
      <div className="explorer-ide">
        <GraphiQL
          fetcher={schema.fetcher}
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
