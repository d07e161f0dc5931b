// The package boundaries, checked by `npm run lint` (so by `npm test`). dependency-cruiser rather than
// eslint-plugin-boundaries: it resolves every import as Node does — TypeScript sources, workspace
// symlinks and each package.json's `exports` map — so an import that goes around a package's declared
// exports fails to resolve and is reported, with no resolver plugin to keep in step; it runs on Node 20.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'No module reaches itself through its imports, type-only imports included: a cycle means two modules are one ' +
        'idea split in two, or share something that belongs in a third (a constant, a mapper type).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'resolvable-through-exports',
      comment:
        'Every import resolves; a package is reached only through a path its package.json `exports` declares. ' +
        '@graphql-typed-document-node/core ships types only (no JavaScript to resolve) and is imported as a type.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true, pathNot: '^@graphql-typed-document-node/core$' },
    },
    {
      name: 'no-relative-path-into-another-package',
      comment: 'Packages (and the scripts and test harness) import a package by name (@ots/…), never by a relative path into its folder.',
      severity: 'error',
      from: { path: '^(shared|gateway|services/[^/]+|scripts|testing)/' },
      to: { dependencyTypes: ['local'], dependencyTypesNot: ['aliased-workspace'], path: '^(shared|gateway|services/[^/]+)/', pathNot: '^$1/' },
    },
    {
      name: 'shared-knows-no-service',
      comment:
        'shared/src is below every service: it imports no service, the gateway, a script or the root test harness ' +
        '(the end-to-end tests in shared/test start the whole stack through that harness).',
      severity: 'error',
      from: { path: '^shared/src/' },
      to: { path: '^(services|gateway|scripts|testing)/' },
    },
    {
      name: 'contracts-are-vocabulary',
      comment:
        "shared/src/contracts holds the services' vocabulary (the event types and the data of the events one service " +
        "reads from another, the payload error codes, the relays' routes): of shared it imports other contracts and " +
        'the id type (shared/src/ids.ts, a leaf) only, never the infrastructure that carries the vocabulary (the ' +
        'outbox, errors, the server), which imports the contracts instead.',
      severity: 'error',
      from: { path: '^shared/src/contracts/' },
      to: { path: '^shared/src/', pathNot: '^shared/src/(contracts/|ids\\.ts$)' },
    },
    {
      name: 'gateway-uses-the-accounts-entry',
      comment: 'The gateway uses only the narrow entry of @ots/accounts (services/accounts/src/index.ts).',
      severity: 'error',
      from: { path: '^gateway/src/' },
      to: { path: '^services/', pathNot: '^services/accounts/src/index\\.ts$' },
    },
    {
      name: 'services-know-no-gateway-or-scripts',
      comment: 'A subgraph does not depend on the gateway, the scripts or the test harness (its tests may).',
      severity: 'error',
      from: { path: '^services/[^/]+/(src|migrations)/' },
      to: { path: '^(gateway|scripts|testing)/' },
    },
    {
      name: 'the-client-knows-no-server',
      comment: "@ots/client is published on its own: its sources import none of the server's packages, scripts or test harness.",
      severity: 'error',
      from: { path: '^clients/[^/]+/src/' },
      to: { path: '^(shared|gateway|services|scripts|testing|console)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // `npm run compile` writes .js beside each source; only the sources are checked.
    exclude: { path: '(^|/)(node_modules|\\.data|dist)/|\\.js$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js', '.json'],
      // Types-only packages (@apollo/utils.fetcher) have no main but a types entry.
      mainFields: ['module', 'main', 'types'],
    },
  },
};
