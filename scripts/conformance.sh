#!/usr/bin/env bash
# Runs the official MCP conformance suite, for spec 2025-11-25 and for the
# 2026-07-28 requirements, against two servers on free loopback ports, and
# compares the results with the baselines in conformance/:
#
#   fixture  the conformance fixture server (internal/conformance/fixtureserver):
#            the suite's own fixture tools, prompts and resources
#            (test_simple_text, slow_compute, test://static-text, ...) on the
#            product's HTTP handler, so every scenario exercises our MCP layer;
#            baselines conformance/fixture-baseline-*.txt
#   product  `mcp-code-runner serve --http`; baselines conformance/baseline-*.txt
#
#   MCR_BINARY=bin/mcp-code-runner bash scripts/conformance.sh
#
# Every check must pass except those a baseline lists as expected failures
# ("SCENARIO:CHECK reason"). A product baseline also names, with "fixture
# SCENARIO:CHECK", the checks that call the suite's fixtures: against the
# product they are not scored, and they must have run against the fixture
# server. The script fails when a check outside the baseline fails, or a
# scenario gives no results, and warns when a baseline entry passes (then
# remove it from the baseline).
#
# Environment:
#   MCR_BINARY               server binary (default: bin/mcp-code-runner)
#   MCR_FIXTURE_BINARY       fixture server binary (default: built with go
#                            build from internal/conformance/fixtureserver)
#   MCR_CONFORMANCE_TARGETS  which servers to test (default: "fixture product")
#   MCR_CONFORMANCE_OUT      directory for results and logs, kept (default: a new
#                            temporary directory, removed unless something fails)
#   MCR_CONFORMANCE_SUITES   which suites to run (default: "2025-11-25 2026-07-28")
#   MCR_CONFORMANCE_TIMEOUT  seconds one suite may take, downloads included (default 900)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${MCR_BINARY:-$ROOT/bin/mcp-code-runner}
SUITES=${MCR_CONFORMANCE_SUITES:-"2025-11-25 2026-07-28"}
TARGETS=${MCR_CONFORMANCE_TARGETS:-"fixture product"}
FIXTURE_BIN=${MCR_FIXTURE_BINARY:-}
SUITE_TIMEOUT=${MCR_CONFORMANCE_TIMEOUT:-900}
NODE_PKG=node@22
CONF_2025=@modelcontextprotocol/conformance@0.1.16
CONF_2026=@modelcontextprotocol/conformance@0.2.0-alpha.12

if [[ " $TARGETS " == *" product "* && ! -x $BIN ]]; then
	echo "conformance: server binary $BIN not found; run make build (or set MCR_BINARY)" >&2
	exit 2
fi
KEEP_OUT=${MCR_CONFORMANCE_OUT:+1}
OUT=${MCR_CONFORMANCE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mcr-conformance.XXXXXX")}
mkdir -p "$OUT"
if [[ " $TARGETS " == *" fixture "* && -z $FIXTURE_BIN ]]; then
	FIXTURE_BIN=$OUT/conformance-fixture
	echo "conformance: building the fixture server ($FIXTURE_BIN)"
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$FIXTURE_BIN" ./internal/conformance/fixtureserver)
fi
if [[ " $TARGETS " == *" fixture "* && ! -x $FIXTURE_BIN ]]; then
	echo "conformance: fixture server binary $FIXTURE_BIN not found; run make build (or set MCR_FIXTURE_BINARY)" >&2
	exit 2
fi
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

# start_server TARGET: starts TARGET's server on a free loopback port, sets
# URL and SERVER_LOG.
start_server() {
	local target=$1 attempt port
	SERVER_LOG=$OUT/$target-server.log
	for attempt in 1 2 3; do
		port=$(free_port)
		case $target in
		# A data directory of its own: another server (a developer's
		# `make run`) may hold the default one.
		product) "$BIN" serve --http "127.0.0.1:$port" --data-dir "$OUT/$target-state" >"$SERVER_LOG" 2>&1 & ;;
		fixture) "$FIXTURE_BIN" --http "127.0.0.1:$port" >"$SERVER_LOG" 2>&1 & ;;
		esac
		SERVER_PID=$!
		for _ in $(seq 1 300); do
			if ! kill -0 "$SERVER_PID" 2>/dev/null; then
				break
			fi
			if healthy "http://127.0.0.1:$port/readyz"; then
				URL="http://127.0.0.1:$port/mcp"
				echo "conformance: $target server $SERVER_PID serving $URL (log: $SERVER_LOG)"
				return 0
			fi
			sleep 0.1
		done
		stop_server
		if ! grep -q "address already in use" "$SERVER_LOG"; then
			break
		fi
		echo "conformance: port $port was taken; retrying (attempt $attempt)" >&2
	done
	echo "conformance: the $target server did not become ready at 127.0.0.1:$port/readyz; its log:" >&2
	cat "$SERVER_LOG" >&2
	return 1
}

# evaluate DIR LOG BASELINE NAME [FIXTURE_DIR]: compares the suite's results
# with the baseline; prints the outcome and exits non-zero on unexpected
# failures. FIXTURE_DIR holds the same suite's results against the fixture
# server, where the baseline's "fixture" checks must have run.
evaluate() {
	node - "$@" <<'JS'
const fs = require('fs');
const path = require('path');
const [dir, logFile, baselineFile, name, fixtureDir] = process.argv.slice(2);
const log = fs.readFileSync(logFile, 'utf8');

// Baseline: "SCENARIO:CHECK reason" (an expected failure) or "fixture
// SCENARIO:CHECK [what it needs]" (not scored here: it calls the suite's
// fixtures); CHECK may be * for every check of the scenario.
const baseline = [];
const fixtureOnly = [];
fs.readFileSync(baselineFile, 'utf8').split('\n').forEach((line, i) => {
  line = line.trim();
  if (!line || line.startsWith('#')) return;
  let m = line.match(/^fixture\s+(\S+?):(\S+)(?:\s+(.*))?$/);
  if (m) { fixtureOnly.push({ scenario: m[1], check: m[2], reason: m[3] ?? '', failed: 0, passed: 0 }); return; }
  m = line.match(/^(\S+?):(\S+)\s+(.+)$/);
  if (!m) { console.error(`${baselineFile}:${i + 1}: want "SCENARIO:CHECK reason" or "fixture SCENARIO:CHECK", got: ${line}`); process.exit(2); }
  baseline.push({ scenario: m[1], check: m[2], reason: m[3], failed: 0, passed: 0 });
});
const matches = (list, scenario, check) =>
  list.find((b) => b.scenario === scenario && (b.check === check || b.check === '*'));

// results DIR SCENARIO: the checks of one scenario's run in DIR, or null.
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
function results(d, s) {
  const dirs = fs.existsSync(d) ? fs.readdirSync(d) : [];
  const re = new RegExp(`^server-${escape(s)}-\\d{4}-\\d\\d-\\d\\dT`);
  const r = dirs.filter((x) => re.test(x)).sort().pop();
  try { const c = r && JSON.parse(fs.readFileSync(path.join(d, r, 'checks.json'), 'utf8')); return Array.isArray(c) ? c : null; } catch { return null; }
}

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

let nPass = 0, nFail = 0, nExpected = 0, nFixture = 0;
const rows = [];
for (const s of scenarios) {
  const checks = results(dir, s);
  if (!checks) {
    const b = matches(baseline, s, '*') ?? matches(fixtureOnly, s, '*');
    if (b) { b.failed++; nExpected++; rows.push(`  xfail ${s}: no results (baseline: ${b.reason})`); }
    else { problems.push(`${s}: no results in ${dir}`); }
    continue;
  }
  for (const c of checks) {
    const f = matches(fixtureOnly, s, c.id);
    if (f) {
      if (c.status === 'FAILURE') { f.failed++; nFixture++; rows.push(`  fixture ${s}:${c.id}`); }
      else f.passed++;
      continue;
    }
    const b = matches(baseline, s, c.id);
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
for (const f of fixtureOnly) {
  if (f.failed + f.passed === 0) {
    warnings.push(`fixture entry ${f.scenario}:${f.check} matched no check: remove or fix it in ${path.basename(baselineFile)}`);
  }
  // A check not scored here must have been scored against the fixture server.
  if (fixtureDir) {
    const checks = results(fixtureDir, f.scenario);
    if (!checks || !checks.some((c) => f.check === '*' || c.id === f.check)) {
      problems.push(`fixture entry ${f.scenario}:${f.check} did not run against the fixture server (${fixtureDir})`);
    }
  }
}
console.log(`conformance ${name}: ${scenarios.length} scenarios; checks: ${nPass} passed, ${nExpected} failed as expected (baseline)` +
  (fixtureOnly.length ? `, ${nFixture} need the suite's fixtures (scored against the fixture server)` : '') +
  `, ${nFail} failed unexpectedly`);
if (process.env.MCR_CONFORMANCE_VERBOSE) rows.forEach((r) => console.log(r));
for (const w of warnings) console.log(`  WARNING ${w}`);
for (const p of problems) console.log(`  FAIL ${p}`);
process.exit(problems.length ? 1 : 0);
JS
}

# run_suite TARGET NAME PACKAGE ARGS...: runs one suite against $URL, then evaluates it.
run_suite() {
	local target=$1 name=$2 pkg=$3
	shift 3
	local dir="$OUT/$target-$name" log="$OUT/$target-$name.log" rc=0 start=$SECONDS baseline fixture_dir=
	case $target in
	product)
		baseline="$ROOT/conformance/baseline-$name.txt"
		if [[ " $TARGETS " == *" fixture "* ]]; then fixture_dir="$OUT/fixture-$name"; fi
		;;
	fixture) baseline="$ROOT/conformance/fixture-baseline-$name.txt" ;;
	esac
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "conformance: running $pkg ($name) against the $target server at $URL"
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
	evaluate "$dir" "$log" "$baseline" "$target $name" "$fixture_dir" || erc=$?
	echo "conformance: $target $name took $((SECONDS - start))s"
	if [[ $erc -ne 0 ]]; then
		return 1
	fi
	# A crash of the suite that still left complete results is suspicious too.
	if [[ $rc -ne 0 && $rc -ne 1 ]]; then
		return 1
	fi
}

failed=()
for target in $TARGETS; do
	case $target in
	product | fixture) ;;
	*)
		echo "conformance: unknown target $target (want fixture or product)" >&2
		failed+=("$target")
		continue
		;;
	esac
	start_server "$target" || { failed+=("$target-server"); continue; }
	for suite in $SUITES; do
		case $suite in
		2025-11-25) run_suite "$target" 2025-11-25 "$CONF_2025" --spec-version 2025-11-25 || failed+=("$target-$suite") ;;
		2026-07-28) run_suite "$target" 2026-07-28 "$CONF_2026" --requirements 2026-07-28 || failed+=("$target-$suite") ;;
		*)
			echo "conformance: unknown suite $suite (want 2025-11-25 or 2026-07-28)" >&2
			failed+=("$suite")
			;;
		esac
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "conformance: the $target server died during the $suite suite; its log:" >&2
			tail -n 50 "$SERVER_LOG" >&2
			failed+=("$target-server-died")
			SERVER_PID=
			start_server "$target" || break
		fi
	done
	stop_server
done

if [[ ${#failed[@]} -gt 0 ]]; then
	echo "conformance: results kept in $OUT"
	echo "conformance: FAILED: ${failed[*]} (checks failing outside conformance/*baseline-*.txt, see above)" >&2
	exit 1
fi
if [[ -z $KEEP_OUT ]]; then
	rm -rf "$OUT"
else
	echo "conformance: results kept in $OUT"
fi
echo "conformance: OK"
