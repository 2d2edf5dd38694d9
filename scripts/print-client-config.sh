#!/usr/bin/env bash
# Prints how to connect MCP clients to mcp-code-runner:
#   bash scripts/print-client-config.sh BIN [ADDR]
# BIN is the server binary (an absolute path is best: clients launch it from
# elsewhere); ADDR is the HOST:PORT that `BIN serve --http ADDR` listens on
# (default 127.0.0.1:8080).
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || $1 == -h || $1 == --help ]]; then
	echo "usage: $0 BIN [ADDR]   (e.g. $0 \$PWD/bin/mcp-code-runner 127.0.0.1:8080)" >&2
	exit 2
fi
BIN=$1
ADDR=${2:-127.0.0.1:8080}
# Make BIN absolute when it names an existing file.
if [[ -e $BIN && $BIN != /* ]]; then
	BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
fi
URL="http://$ADDR/mcp"
NAME=code-runner
INSPECTOR="npx -y -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector"

# json STRING: STRING as a JSON string literal.
json() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\t'/\\t}
	s=${s//$'\n'/\\n}
	s=${s//$'\r'/\\r}
	printf '"%s"' "$s"
}
JBIN=$(json "$BIN")
JURL=$(json "$URL")
QBIN=$(printf '%q' "$BIN")

host=${ADDR%:*}
host=${host#[}
host=${host%]}
case $host in
127.* | localhost | ::1) remote= ;;
*) remote=1 ;;
esac

cat <<EOF
== mcp-code-runner: connecting MCP clients ==

Streamable HTTP endpoint (\`$QBIN serve --http $ADDR\`):
  $URL
EOF
if [[ -n $remote ]]; then
	cat <<EOF
  $host is not a loopback address: the server then requires --auth-token (or
  MCR_AUTH_TOKEN), and clients must send "Authorization: Bearer <token>"
  (Claude Code: add --header "Authorization: Bearer <token>"; VS Code: add
  "headers": {"Authorization": "Bearer <token>"} to the http entry).
EOF
	case $host in
	0.0.0.0 | ::) echo "  Clients connect to this machine's name or address, not $host." ;;
	esac
fi
cat <<EOF

Claude Desktop (stdio; claude_desktop_config.json: ~/Library/Application Support/Claude/
on macOS, %APPDATA%\\Claude\\ on Windows, ~/.config/Claude/ on Linux):
{
  "mcpServers": {
    "$NAME": {
      "command": $JBIN,
      "args": ["serve"]
    }
  }
}

Claude Code:
  # over HTTP (the server must be running):
  claude mcp add --transport http $NAME $URL
  # or over stdio (Claude Code starts the server itself):
  claude mcp add --transport stdio $NAME -- $QBIN serve

VS Code (.vscode/mcp.json in the workspace; use one of the two entries):
{
  "servers": {
    "$NAME": {
      "type": "http",
      "url": $JURL
    },
    "$NAME-stdio": {
      "type": "stdio",
      "command": $JBIN,
      "args": ["serve"]
    }
  }
}

MCP Inspector (Node 22 comes from npm):
  # web UI, against the running HTTP server:
  $INSPECTOR --web --transport http --server-url $URL
  # command line, over HTTP (--protocol-era legacy|auto|modern picks the protocol era):
  $INSPECTOR --cli --method tools/list $URL
  $INSPECTOR --cli --method tools/call --tool-name run_code --tool-args-json '{"language":"python","code":"print(6*7)"}' $URL
  # command line, over stdio:
  $INSPECTOR --cli --method tools/list -- $QBIN serve
EOF
