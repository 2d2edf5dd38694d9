#!/usr/bin/env bash
# Runs the official MCP conformance suite against `mcp-code-runner serve --http`
# on a free loopback port, for spec 2025-11-25 and for the 2026-07-28
# requirements, and compares the results with the baselines in conformance/.
#
#   MCR_BINARY=bin/mcp-code-runner bash scripts/conformance.sh
#
# Every check must pass except those listed in conformance/baseline-*.txt
# (scenarios that need the suite's own fixture tools, prompts and resources,
# or features the server does not offer). The script fails when a check
# outside the baseline fails, or a scenario gives no results, and warns when
# a baseline entry passes (then remove it from the baseline).
#
# Environment:
#   MCR_BINARY               server binary (default: bin/mcp-code-runner)
#   MCR_CONFORMANCE_OUT      directory for results and logs, kept (default: a new
#                            temporary directory, removed unless something fails)
#   MCR_CONFORMANCE_SUITES   which suites to run (default: "2025-11-25 2026-07-28")
#   MCR_CONFORMANCE_TIMEOUT  seconds one suite may take, downloads included (default 900)
#   MCR_HTTP_RATE_PER_MINUTE the server's per-client request rate limit; 0 (none)
#                            unless set: the suite sends a few hundred requests in
#                            seconds from one address, which the default limit
#                            (600/min, bursts of 100) answers with 429
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${MCR_BINARY:-$ROOT/bin/mcp-code-runner}
SUITES=${MCR_CONFORMANCE_SUITES:-"2025-11-25 2026-07-28"}
SUITE_TIMEOUT=${MCR_CONFORMANCE_TIMEOUT:-900}
NODE_PKG=node@22
CONF_2025=@modelcontextprotocol/conformance@0.1.16
CONF_2026=@modelcontextprotocol/conformance@0.2.0-alpha.12

if [[ ! -x $BIN ]]; then
	echo "conformance: server binary $BIN not found; run make build (or set MCR_BINARY)" >&2
	exit 2
fi
KEEP_OUT=${MCR_CONFORMANCE_OUT:+1}
OUT=${MCR_CONFORMANCE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mcr-conformance.XXXXXX")}
mkdir -p "$OUT"
export MCR_HTTP_RATE_PER_MINUTE=${MCR_HTTP_RATE_PER_MINUTE:-0}
export npm_config_yes=true npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

SERVER_PID=
SUITE_PID=
stop_suite() {
	[[ -n $SUITE_PID ]] || return 0
	kill -TERM "$SUITE_PID" 2>/dev/null || true
	wait "$SUITE_PID" 2>/dev/null || true
	SUITE_PID=
}
stop_server() {
	[[ -n $SERVER_PID ]] || return 0
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		# The server gives runs in flight up to 30 s at shutdown.
		for _ in $(seq 1 350); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "conformance: server $SERVER_PID did not stop on SIGTERM; killing it" >&2
			kill -KILL "$SERVER_PID" 2>/dev/null || true
		fi
	fi
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
}
trap 'stop_suite; stop_server' EXIT
trap 'stop_suite; stop_server; exit 130' INT
trap 'stop_suite; stop_server; exit 143' TERM

free_port() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# healthy URL: whether URL answers 200 (curl, or node where curl is missing).
healthy() {
	if command -v curl >/dev/null; then
		curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null
	else
		node -e 'fetch(process.argv[1],{signal:AbortSignal.timeout(2000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$1"
	fi
}

# start_server: starts the server on a free loopback port, sets URL.
start_server() {
	local attempt port
	for attempt in 1 2 3; do
		port=$(free_port)
		"$BIN" serve --http "127.0.0.1:$port" >"$OUT/server.log" 2>&1 &
		SERVER_PID=$!
		for _ in $(seq 1 300); do
			if ! kill -0 "$SERVER_PID" 2>/dev/null; then
				break
			fi
			if healthy "http://127.0.0.1:$port/readyz"; then
				URL="http://127.0.0.1:$port/mcp"
				echo "conformance: server $SERVER_PID serving $URL (log: $OUT/server.log)"
				return 0
			fi
			sleep 0.1
		done
		stop_server
		if ! grep -q "address already in use" "$OUT/server.log"; then
			break
		fi
		echo "conformance: port $port was taken; retrying (attempt $attempt)" >&2
	done
	echo "conformance: the server did not become ready at 127.0.0.1:$port/readyz; its log:" >&2
	cat "$OUT/server.log" >&2
	return 1
}

# evaluate DIR LOG BASELINE NAME: compares the suite's results with the
# baseline; prints the outcome and exits non-zero on unexpected failures.
evaluate() {
	node - "$@" <<'JS'
const fs = require('fs');
const path = require('path');
const [dir, logFile, baselineFile, name] = process.argv.slice(2);
const log = fs.readFileSync(logFile, 'utf8');

// Baseline: "SCENARIO:CHECK reason" (CHECK may be * for every check).
const baseline = [];
fs.readFileSync(baselineFile, 'utf8').split('\n').forEach((line, i) => {
  line = line.trim();
  if (!line || line.startsWith('#')) return;
  const m = line.match(/^(\S+?):(\S+)\s+(.+)$/);
  if (!m) { console.error(`${baselineFile}:${i + 1}: want "SCENARIO:CHECK reason", got: ${line}`); process.exit(2); }
  baseline.push({ scenario: m[1], check: m[2], reason: m[3], failed: 0, passed: 0 });
});
const allowed = (scenario, check) =>
  baseline.find((b) => b.scenario === scenario && (b.check === check || b.check === '*'));

// The scenarios the suite ran, in order, from its log.
const scenarios = [...log.matchAll(/^=== Running scenario: (\S+) ===$/gm)].map((m) => m[1]);
const announced = log.match(/Running .*?\((\d+) scenarios?\)/);
const problems = [];
const warnings = [];
if (!/=== SUMMARY ===/.test(log)) problems.push('the suite did not finish (no SUMMARY in its output)');
if (announced && Number(announced[1]) !== scenarios.length) {
  problems.push(`the suite announced ${announced[1]} scenarios but ran ${scenarios.length}`);
}
if (scenarios.length === 0) problems.push('no scenario ran');

// Results: DIR/server-SCENARIO-TIMESTAMP/checks.json
const dirs = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
let nPass = 0, nFail = 0, nExpected = 0;
const rows = [];
for (const s of scenarios) {
  const re = new RegExp(`^server-${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d{4}-\\d\\d-\\d\\dT`);
  const d = dirs.filter((x) => re.test(x)).sort().pop();
  let checks = null;
  try { checks = d && JSON.parse(fs.readFileSync(path.join(dir, d, 'checks.json'), 'utf8')); } catch { checks = null; }
  if (!Array.isArray(checks)) {
    const b = allowed(s, '*');
    if (b) { b.failed++; nExpected++; rows.push(`  xfail ${s}: no results (baseline: ${b.reason})`); }
    else { problems.push(`${s}: no results (${d ? d + '/checks.json unreadable' : 'no results directory'})`); }
    continue;
  }
  for (const c of checks) {
    const b = allowed(s, c.id);
    if (c.status === 'FAILURE') {
      if (b) { b.failed++; nExpected++; rows.push(`  xfail ${s}:${c.id}`); }
      else { nFail++; problems.push(`${s}:${c.id} FAILED: ${c.errorMessage ?? ''}`); }
    } else {
      if (b) b.passed++;
      if (c.status === 'SUCCESS') nPass++;
      if (c.status === 'WARNING') warnings.push(`${s}:${c.id}: ${c.errorMessage ?? c.details?.message ?? ''}`);
    }
  }
}
for (const b of baseline) {
  if (b.failed === 0 && b.passed > 0) {
    warnings.push(`baseline entry ${b.scenario}:${b.check} now PASSES: remove it from ${path.basename(baselineFile)}`);
  } else if (b.failed === 0 && !scenarios.includes(b.scenario)) {
    warnings.push(`baseline entry ${b.scenario}:${b.check} did not run: remove it from ${path.basename(baselineFile)} if the suite dropped it`);
  } else if (b.failed === 0) {
    warnings.push(`baseline entry ${b.scenario}:${b.check} matched no check: remove or fix it in ${path.basename(baselineFile)}`);
  }
}
console.log(`conformance ${name}: ${scenarios.length} scenarios; checks: ${nPass} passed, ${nExpected} failed as expected (baseline), ${nFail} failed unexpectedly`);
if (process.env.MCR_CONFORMANCE_VERBOSE) rows.forEach((r) => console.log(r));
for (const w of warnings) console.log(`  WARNING ${w}`);
for (const p of problems) console.log(`  FAIL ${p}`);
process.exit(problems.length ? 1 : 0);
JS
}

# run_suite NAME PACKAGE ARGS...: runs one suite against $URL, then evaluates it.
run_suite() {
	local name=$1 pkg=$2
	shift 2
	local dir="$OUT/$name" log="$OUT/$name.log" baseline="$ROOT/conformance/baseline-$name.txt" rc=0 start=$SECONDS
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "conformance: running $pkg ($name) against $URL"
	# In the background, so that a signal to this script is handled at once.
	timeout -k 10 "$SUITE_TIMEOUT" npx -y -p "$NODE_PKG" -p "$pkg" -- conformance server --url "$URL" "$@" -o "$dir" >"$log" 2>&1 &
	SUITE_PID=$!
	wait "$SUITE_PID" || rc=$?
	SUITE_PID=
	# The suite exits 1 when any check fails; the baseline decides.
	if [[ $rc -ne 0 && $rc -ne 1 ]]; then
		echo "conformance: $pkg exited with $rc (124: timed out after ${SUITE_TIMEOUT}s); last lines of $log:" >&2
		tail -n 30 "$log" >&2
	fi
	if [[ ! -f $baseline ]]; then
		echo "conformance: missing baseline $baseline" >&2
		return 1
	fi
	local erc=0
	evaluate "$dir" "$log" "$baseline" "$name" || erc=$?
	echo "conformance: $name took $((SECONDS - start))s"
	if [[ $erc -ne 0 ]]; then
		return 1
	fi
	# A crash of the suite that still left complete results is suspicious too.
	if [[ $rc -ne 0 && $rc -ne 1 ]]; then
		return 1
	fi
}

start_server
failed=()
for suite in $SUITES; do
	case $suite in
	2025-11-25) run_suite 2025-11-25 "$CONF_2025" --spec-version 2025-11-25 || failed+=("$suite") ;;
	2026-07-28) run_suite 2026-07-28 "$CONF_2026" --requirements 2026-07-28 || failed+=("$suite") ;;
	*)
		echo "conformance: unknown suite $suite (want 2025-11-25 or 2026-07-28)" >&2
		failed+=("$suite")
		;;
	esac
	if ! kill -0 "$SERVER_PID" 2>/dev/null; then
		echo "conformance: the server died during the $suite suite; its log:" >&2
		tail -n 50 "$OUT/server.log" >&2
		failed+=("server-died")
		SERVER_PID=
		start_server
	fi
done
stop_server

if [[ ${#failed[@]} -gt 0 ]]; then
	echo "conformance: results kept in $OUT"
	echo "conformance: FAILED: ${failed[*]} (checks failing outside conformance/baseline-*.txt, see above)" >&2
	exit 1
fi
if [[ -z $KEEP_OUT ]]; then
	rm -rf "$OUT"
else
	echo "conformance: results kept in $OUT"
fi
echo "conformance: OK"
