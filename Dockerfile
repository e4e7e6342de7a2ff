# Build stage: compile TypeScript with the dev dependencies. The embedded PostgreSQL (an optional
# dependency, ~30 MB per platform) is left out: a container is given DATABASE_URL.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# postinstall (patch-package) applies patches/: the postgres.js fixes, see docs/contributing.md
COPY patches ./patches
RUN npm ci --omit=optional --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY test ./test
RUN npm run build

# Runtime stage: production dependencies only (no embedded PostgreSQL), non-root user. There is
# no src/ here, so bin/hookpost.js runs dist/ as built above.
FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 HOOKPOST_DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# postinstall (patch-package) applies patches/: the postgres.js fixes, see docs/contributing.md
COPY patches ./patches
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
# The pages (/ui, /docs) are served from here at run time.
COPY src/ui/static ./src/ui/static
COPY bin ./bin
COPY sql ./sql
COPY dashboards ./dashboards
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
# DATABASE_URL, HOOKPOST_SECRET_KEY and HOOKPOST_ADMIN_TOKEN (or API keys) come from the
# environment; see docs/deploying.md and compose.yaml.
# --single-threaded-gc: less CPU per delivery on a few shared cores (src/node-flags.ts).
ENTRYPOINT ["node", "--single-threaded-gc", "bin/hookpost.js"]
CMD ["start"]
