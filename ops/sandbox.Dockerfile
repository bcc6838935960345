# The default sandbox image: the daemon (svc-agent), its entrypoint (PID 1), the CLI,
# git and the opencode runtime, under the spec's sandbox layout:
#   /usr/local/bin/svc-agent, /usr/local/bin/svc-entrypoint, /usr/local/bin/svc,
#   /opt/svc/home (the runtime's HOME), /workspace (the repo is cloned here).
# Build it with ops/sandbox-image.sh, which assembles the context (ops/sandbox-context.ts:
# app/ = the compiled daemon + CLI and the npm packages they import, bin/ = the links)
# and passes BASE_IMAGE. Offline hosts: BASE_IMAGE from ops/sandbox-base-image.sh.
#
# A repo's own .svc/Dockerfile extends this image:
#   ARG SVC_SANDBOX_IMAGE
#   FROM ${SVC_SANDBOX_IMAGE}
#   USER root
#   RUN apt-get update && apt-get install -y --no-install-recommends python3
#   USER 1000:1000
ARG BASE_IMAGE=node:20-slim
FROM ${BASE_IMAGE}

# git (the local base already has it; node:20-slim does not). No-op when present.
RUN command -v git >/dev/null 2>&1 || { apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*; }
# node:20-slim keeps node in /usr/local/bin; the links below call `node` from PATH.
RUN command -v node >/dev/null 2>&1 && mkdir -p /opt/svc/home /workspace && chown 1000:1000 /opt/svc/home /workspace

# A login shell (`bash -l`, how the runtime runs its tools) reads /etc/profile, which on
# Debian resets PATH: put the sandbox's tools back (a base without /etc/profile keeps PATH).
RUN mkdir -p /etc/profile.d && printf '%s\n' 'case ":$PATH:" in *:/opt/svc/app/node_modules/.bin:*) ;; *) PATH="/usr/local/bin:$PATH:/opt/svc/app/node_modules/.bin"; export PATH ;; esac' > /etc/profile.d/svc-path.sh

COPY app /opt/svc/app
COPY bin/ /usr/local/bin/

ENV SVC_WORKSPACE=/workspace \
    SVC_AGENT_HOME=/opt/svc/home \
    HOME=/opt/svc/home \
    SVC_SERVICE_PORT=8000 \
    PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin:/opt/svc/app/node_modules/.bin
USER 1000:1000
WORKDIR /workspace
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/svc-entrypoint"]
