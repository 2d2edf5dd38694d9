# The package installer: the Python image (Debian's Python 3.13, so wheels it
# installs are those the python image imports) with Debian's pip, Node.js 20
# and npm (the node image's Node.js, so modules it installs are those the
# node image requires). It runs only package managers, in a sandbox of its
# own whose one route out is the server's egress proxy; the installed tree
# is then mounted read-only into the runs that asked for it.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-pip nodejs npm ca-certificates \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
 && node --version && npm --version && python3 -m pip --version
USER 10001:10001
