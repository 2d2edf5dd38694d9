# The agent image: the static agent alone. A sandbox pod's init container
# runs `/agent install` from it to copy the agent into a volume, so the
# runtime images stay as they are.
#
#   make build && docker build -f deploy/kubernetes/agent.Dockerfile -t REGISTRY/mcp-code-runner/agent:TAG bin
FROM scratch
COPY mcp-code-runner-agent /agent
USER 10001:10001
ENTRYPOINT ["/agent"]
