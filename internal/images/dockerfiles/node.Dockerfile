# Debian's Node.js (20 in trixie) with the TypeScript compiler and the Node.js
# type definitions from npm, under /usr/local/lib/node_modules.
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
ARG TYPESCRIPT_VERSION=5.9.3
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
RUN ln -s ../lib/node_modules/typescript/bin/tsc /usr/local/bin/tsc \
 && node --version && tsc --version
USER 10001:10001
