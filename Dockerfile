# mcp-code-runner as a container image: the static binaries that
# `make build` makes, on an empty base. `make image` builds it through
# scripts/build-image.sh, which puts this file, the binaries and the host's
# CA certificates (for OAuth token introspection over HTTPS) in a build
# context of their own; no registry is needed.
#
# Sandboxes are siblings on the host's Docker daemon, reached through its
# socket: see docker-compose.yml and the README's "Running the server in a
# container" for what that grants and how to run it.
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY mcp-code-runner mcp-code-runner-agent /usr/local/bin/
# A non-root user; reaching the Docker socket takes the socket's group
# (docker run --group-add, compose group_add).
USER 65532:65532
# The daemon mounts the agent binary into every sandbox from its own file
# system, so the server copies it into a directory that the daemon sees at
# the same path (a bind mount of that host path); the agents' sockets are
# made there too.
ENV MCR_SHARED_DIR=/var/lib/mcp-code-runner
# The state that outlives the process (sessions, executions, results) is
# kept beside it, on the same mounted directory: the image's own file
# system is read-only.
ENV MCR_DATA_DIR=/var/lib/mcp-code-runner/state
EXPOSE 8080 9464
ENTRYPOINT ["/usr/local/bin/mcp-code-runner"]
CMD ["serve", "--http", "127.0.0.1:8080", "--metrics-addr", "127.0.0.1:9464"]
