// `node dist/events/main.js`: the events subgraph as the production image runs it, on the JavaScript `npm run compile`
// writes beside the sources. The tracing preload comes first and alone, since it registers the module
// hooks every later import must go through; then the service itself.
await import('../../shared/src/tracing-preload.js');
await import('../../services/events/src/main.js');
