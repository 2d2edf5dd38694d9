# C# with Mono (Debian's mono-mcs compiler and mono runtime): .NET itself is
# not packaged in Debian and its download site is not reachable from the
# builds, so C# runs on Mono.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends mono-mcs mono-runtime \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
