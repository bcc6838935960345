# The svc server image: `svc-server start` by default (API + workers; embedded PostgreSQL
# unless DATABASE_URL), or `api`, `worker`, `migrate`, `admin bootstrap ...` as the command.
#
#   docker build -f ops/server.Dockerfile -t svc-server .            # from a checkout, on node:20-slim
#   ops/server-image.sh [--base svc-sandbox-base:local]              # offline: prebuilt context, local base
#
# BASE_IMAGE is the runtime base (node >= 20, a shell; git and bubblewrap are installed when missing) and
# BUILD_IMAGE the build stage's (needs npm unless the context is prebuilt).
ARG BASE_IMAGE=node:20-slim
ARG BUILD_IMAGE=node:20-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
COPY . .
# A context from ops/server-context.ts carries the compiled server and its production
# packages (`.prebuilt`); a plain checkout is compiled here and pruned to production deps
# (optional ones stay: the embedded PostgreSQL binaries are an optional dependency; nodegit,
# the libgit2 engine, is not a dependency: the image runs the git engine).
# `rootfs-extra/` (offline contexts for a minimal local base only) holds system libraries
# the bundled PostgreSQL binaries load (node:20-slim has them) and the host's bwrap.
RUN if [ -f .prebuilt ]; then echo "prebuilt context: no npm"; \
    else { if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi; } \
      && npm run build && npm prune --omit=dev; fi \
 && mkdir -p /app /extra && cp -a package.json dist sql node_modules /app/ && rm -rf /app/dist/test /app/sql/queries \
 && if [ -d rootfs-extra ]; then cp -a rootfs-extra/. /extra/; fi

FROM ${BASE_IMAGE}
# git, and bubblewrap for the bwrap sandbox provider (an offline context brings them in
# rootfs-extra/, so nothing is installed then).
COPY --from=build /extra/ /
# mount and setpriv: the compose stack's entrypoint (ops/compose.yaml) mounts a procfs for
# bwrap, then drops to uid 1000 without capabilities.
RUN { command -v git && command -v bwrap && command -v mount && command -v setpriv; } >/dev/null 2>&1 || { apt-get update && apt-get install -y --no-install-recommends git ca-certificates bubblewrap util-linux mount && rm -rf /var/lib/apt/lists/*; }
COPY --from=build /app /opt/svc/server
RUN mkdir -p /var/lib/svc \
 && chown 1000:1000 /var/lib/svc \
 && ln -s /opt/svc/server/dist/ops/svc-server.js /usr/local/bin/svc-server \
 && chmod 755 /opt/svc/server/dist/ops/svc-server.js

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    SVC_DATA_DIR=/var/lib/svc \
    SVC_GIT_ENGINE=git \
    PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
# Non-root (uid 1000: `node` in node:20-slim, `svc` in the local base). The embedded
# PostgreSQL refuses root anyway.
USER 1000:1000
WORKDIR /var/lib/svc
VOLUME ["/var/lib/svc"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "/opt/svc/server/dist/ops/svc-server.js"]
CMD ["start"]
