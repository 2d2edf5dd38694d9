# The base of every runtime image: the root Debian trixie image (pulled or
# bootstrapped) plus the unprivileged sandbox user (uid/gid 10001) whose home
# is /workspace. Bash scripts run here; nothing else is installed.
ARG BASE
FROM ${BASE}
RUN groupadd --gid 10001 sandbox \
 && useradd --uid 10001 --gid 10001 --home-dir /workspace --no-create-home --shell /bin/bash sandbox \
 && install -d -o 10001 -g 10001 -m 0755 /workspace \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
ENV LANG=C.UTF-8
WORKDIR /workspace
USER 10001:10001
