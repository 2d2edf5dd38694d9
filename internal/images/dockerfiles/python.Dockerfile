# Debian's Python 3 (3.13 in trixie), without recommended extras.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
