# Build stage: compile TypeScript with the dev dependencies.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# postinstall (patch-package) applies patches/: the postgres.js socket guard, see README
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY test ./test
RUN npm run build

# Runtime stage: production dependencies only, non-root user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 HOOKPOST_DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# postinstall (patch-package) applies patches/: the postgres.js socket guard, see README
COPY patches ./patches
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY bin ./bin
COPY sql ./sql
COPY dashboards ./dashboards
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
# DATABASE_URL and HOOKPOST_SECRET_KEY are expected from the environment in production.
ENTRYPOINT ["node", "bin/hookpost.js"]
CMD ["start"]
