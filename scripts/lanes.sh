#!/usr/bin/env bash
# lanes.sh runs lanes of test commands side by side, the commands of each
# lane one after another, every line of a lane's output prefixed with the
# lane's name as it comes. A lane runs all its commands even when one fails
# (as make test does); the run fails when any command of any lane failed.
# At the end it prints each lane's time and each command that failed.
#
#   usage: lanes.sh NAME 'CMD; CMD; ...' [NAME 'CMD; ...' ...]
#
# make test runs the Docker-heavy parts in two lanes: most of their time is
# spent waiting (sandboxes sleeping to their timeouts, containers starting
# and going, a fork bomb held at its pids limit), so one lane's waits are
# the other's CPU time on a 2-core machine. Each test process labels its
# sandboxes with its own pid and counts only its own as leftovers, so the
# lanes do not see each other's.
set -uo pipefail

if (($# == 0 || $# % 2 != 0)); then
	echo "usage: lanes.sh NAME 'CMD; CMD; ...' [NAME 'CMD; ...' ...]" >&2
	exit 2
fi

names=() pids=()
status_dir=$(mktemp -d "${TMPDIR:-/tmp}/lanes.XXXXXX")

# shellcheck disable=SC2317 # called by the traps below
stop_lanes() {
	local pid
	for pid in "${pids[@]}"; do
		# Each lane leads its own process group (set -m below).
		kill -TERM -- "-$pid" 2>/dev/null || true
	done
}
trap 'stop_lanes; exit 143' TERM
trap 'stop_lanes; exit 130' INT

# lane NAME CMDS: runs each ';'-separated command of CMDS, all of them,
# recording in the status directory the ones that failed.
lane() {
	local name=$1 cmds=$2 start=$SECONDS cmd rc=0
	IFS=';' read -r -a list <<<"$cmds"
	for cmd in "${list[@]}"; do
		cmd=$(sed 's/^ *//; s/ *$//' <<<"$cmd")
		[[ -z $cmd ]] && continue
		echo "--- $cmd"
		if ! bash -c "$cmd"; then
			echo "$cmd" >>"$status_dir/$name.failed"
			rc=1
		fi
	done
	echo "$((SECONDS - start))" >"$status_dir/$name.seconds"
	return "$rc"
}

set -m
while (($# > 0)); do
	name=$1 cmds=$2
	shift 2
	names+=("$name")
	# stdbuf keeps the prefixing line by line, so that the lanes' lines
	# interleave whole.
	(lane "$name" "$cmds" 2>&1 | stdbuf -oL sed "s/^/[$name] /") &
	pids+=("$!")
done
set +m

rc=0
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || true
done
echo
echo "=== lanes ==="
for name in "${names[@]}"; do
	secs=$(cat "$status_dir/$name.seconds" 2>/dev/null || echo "?")
	if [[ -s $status_dir/$name.failed ]]; then
		rc=1
		echo "  $name: ${secs}s, FAILED:"
		sed 's/^/    /' "$status_dir/$name.failed"
	elif [[ $secs == "?" ]]; then
		rc=1
		echo "  $name: did not finish"
	else
		echo "  $name: ${secs}s"
	fi
done
rm -rf "$status_dir"
exit "$rc"
