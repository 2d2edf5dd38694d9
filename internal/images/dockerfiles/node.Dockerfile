# Debian's Node.js (20 in trixie) with the TypeScript compiler and the Node.js
# type definitions from npm, under /usr/local/lib/node_modules; and beside it
# the current Node.js LTS line (24, "Krypton") as node24, the official
# binary that npm's node-linux-<arch> package ships, for javascript-lts.
#
# Debian's Node.js stays what `javascript` and TypeScript run: Debian patches
# it for security, and the packages image installs npm modules (native
# addons included) with the same Node.js. node24 is pinned to one release
# (NODE_LTS_VERSION); `node -p process.release.lts` names its LTS line.
#
# TypeScript 7 is the compiler ported to Go: a static executable that
# type-checks and emits a hello world in about 0.2 s, where TypeScript 5's
# tsc.js took 4-5 s at one CPU (most of it loading and compiling itself in
# Node.js). npm installs it as typescript's platform package; /usr/local/bin/tsc
# links the executable itself, not the Node.js launcher in front of it, which
# would cost a Node.js start (about 150 ms) before every compile.
#
# npm (with its several hundred Debian packages) runs only in the first stage;
# the image gets Node.js from apt and the installed modules by COPY.
# EXTRA_CA_CERTS holds PEM certificates that npm must trust in addition to the
# usual ones (a TLS-intercepting proxy); it never reaches the final image. The
# label lets the builder delete the stage's image afterwards.
ARG BASE

FROM ${BASE} AS tools
LABEL io.mcp-code-runner.build-stage=true
ARG DEBIAN_FRONTEND=noninteractive
ARG TYPESCRIPT_VERSION=7.0.2
ARG TYPES_NODE_VERSION=20.19.43
ARG NODE_LTS_VERSION=24.21.0
ARG EXTRA_CA_CERTS=
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm ca-certificates \
 && if [ -n "$EXTRA_CA_CERTS" ]; then \
      printf '%s\n' "$EXTRA_CA_CERTS" > /tmp/extra-ca.pem && export NODE_EXTRA_CA_CERTS=/tmp/extra-ca.pem; fi \
 && npm install --global --prefix /usr/local \
      --no-audit --no-fund --no-update-notifier --cache /tmp/npm-cache \
      "typescript@${TYPESCRIPT_VERSION}" "@types/node@${TYPES_NODE_VERSION}" \
 && case "$(dpkg --print-architecture)" in amd64) arch=x64 ;; arm64) arch=arm64 ;; *) arch=unsupported ;; esac \
 && npm install --prefix /tmp/node-lts --no-audit --no-fund --no-update-notifier --cache /tmp/npm-cache \
      "node-linux-${arch}@${NODE_LTS_VERSION}" \
 && install -D -m 0755 "/tmp/node-lts/node_modules/node-linux-${arch}/bin/node" /opt/node-lts/bin/node \
 && /opt/node-lts/bin/node -e 'if (!process.release.lts) { console.error(process.version + " is not an LTS release"); process.exit(1) }'

FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
COPY --from=tools /usr/local/lib/node_modules /usr/local/lib/node_modules
COPY --from=tools /opt/node-lts /opt/node-lts
RUN ln -s /opt/node-lts/bin/node /usr/local/bin/node24 \
 && tsc="$(find /usr/local/lib/node_modules -path '*/@typescript/typescript-linux-*/lib/tsc' -type f | head -n 1)" \
 && test -n "$tsc" && ln -s "$tsc" /usr/local/bin/tsc \
 && node --version && node24 --version && tsc --version
USER 10001:10001
