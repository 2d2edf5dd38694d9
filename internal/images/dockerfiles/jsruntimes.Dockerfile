# The other JavaScript runtimes, beside the node image's Node.js: Deno and Bun
# (each runs TypeScript itself, without a compile step) and CoffeeScript 2
# (a language that compiles to JavaScript, run on Debian's Node.js).
#
# The image is built on demand (registry "on_demand"): by `images build
# --all`, by naming one of its languages or the image, and in CI, but not by
# `make run`'s default set. It builds on node because CoffeeScript runs on
# Debian's Node.js, which that image already holds.
#
# Deno and Bun are single executables; npm ships them as platform packages
# (@deno/linux-<arch>-glibc, @oven/bun-linux-<arch>), which the deno and bun
# packages pull in as optional dependencies and reach through a launcher
# script. The first stage installs the platform packages alone (no launcher,
# no postinstall script) with npm, and the image gets the two executables by
# COPY: no npm, no npm cache, no node_modules. Versions are pinned
# (DENO_VERSION, BUN_VERSION).
#
# Bun's x64 build needs AVX2; on an x64 CPU without it the stage takes Bun's
# -baseline build instead, as Bun's own installer does (checked on the
# machine that builds the image, which is the one that runs it).
#
# CoffeeScript is Debian's package (2.7.0), without recommends.
#
# EXTRA_CA_CERTS holds PEM certificates that npm must trust in addition to the
# usual ones (a TLS-intercepting proxy); it never reaches the final image. The
# label lets the builder delete the stage's image afterwards.
ARG BASE

FROM ${BASE} AS tools
LABEL io.mcp-code-runner.build-stage=true
ARG DEBIAN_FRONTEND=noninteractive
ARG DENO_VERSION=2.9.6
ARG BUN_VERSION=1.4.5
ARG EXTRA_CA_CERTS=
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends npm ca-certificates \
 && if [ -n "$EXTRA_CA_CERTS" ]; then \
      printf '%s\n' "$EXTRA_CA_CERTS" > /tmp/extra-ca.pem && export NODE_EXTRA_CA_CERTS=/tmp/extra-ca.pem; fi \
 && case "$(dpkg --print-architecture)" in \
      amd64) deno=linux-x64-glibc; if grep -qw avx2 /proc/cpuinfo; then bun=linux-x64; else bun=linux-x64-baseline; fi ;; \
      arm64) deno=linux-arm64-glibc; bun=linux-aarch64 ;; \
      *) echo "no Deno or Bun for $(dpkg --print-architecture)" >&2; exit 1 ;; esac \
 && npm install --prefix /tmp/js --no-audit --no-fund --no-update-notifier --ignore-scripts \
      --cache /tmp/npm-cache "@deno/${deno}@${DENO_VERSION}" "@oven/bun-${bun}@${BUN_VERSION}" \
 && install -D -m 0755 "/tmp/js/node_modules/@deno/${deno}/deno" /opt/js/bin/deno \
 && install -D -m 0755 "/tmp/js/node_modules/@oven/bun-${bun}/bin/bun" /opt/js/bin/bun \
 && /opt/js/bin/deno --version && /opt/js/bin/bun --version

FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends coffeescript \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
COPY --from=tools /opt/js/bin/deno /opt/js/bin/bun /usr/local/bin/
RUN deno --version && bun --version && coffee --version
USER 10001:10001
