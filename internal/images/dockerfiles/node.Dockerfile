# Debian's Node.js (20 in trixie) with the TypeScript compiler and the Node.js
# type definitions from npm, under /usr/local/lib/node_modules.
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
ARG EXTRA_CA_CERTS=
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm ca-certificates \
 && if [ -n "$EXTRA_CA_CERTS" ]; then \
      printf '%s\n' "$EXTRA_CA_CERTS" > /tmp/extra-ca.pem && export NODE_EXTRA_CA_CERTS=/tmp/extra-ca.pem; fi \
 && npm install --global --prefix /usr/local \
      --no-audit --no-fund --no-update-notifier --cache /tmp/npm-cache \
      "typescript@${TYPESCRIPT_VERSION}" "@types/node@${TYPES_NODE_VERSION}"

FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
COPY --from=tools /usr/local/lib/node_modules /usr/local/lib/node_modules
RUN tsc="$(find /usr/local/lib/node_modules -path '*/@typescript/typescript-linux-*/lib/tsc' -type f | head -n 1)" \
 && test -n "$tsc" && ln -s "$tsc" /usr/local/bin/tsc \
 && node --version && tsc --version
USER 10001:10001
