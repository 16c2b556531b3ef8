#!/usr/bin/env bash
# Runs BenchmarkMessagePath at the commit before the message path changed
# (90819be^) and at HEAD, each from its own copy of the tree under /tmp with
# the matching benchmark file of this folder as a test of its messages/
# package, and writes the raw outputs and a benchstat comparison here.
#
#   experiments/results/message_path/before_after/run.sh
#
# Environment: BEFORE, AFTER (revisions; default 90819be^ and HEAD),
# COUNT (rounds; default 5), BENCHTIME (default 20x), OUT_DIR (default this
# folder). It writes before.txt, after.txt, run-info.txt (the commits, the
# Go version, the load) and benchstat.txt. Each round runs both sides once,
# one after the other, the one first alternating, so that a box whose speed
# drifts weighs on both. Each side's test binary is built once (go test
# -c); a round is what
#   go test -run '^$' -bench '^BenchmarkMessagePath$' -benchtime 20x -count 1 ./messages/
# would run. The trees are git archives of the committed revisions (not the
# working tree), removed at the end.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
before_rev=${BEFORE:-90819be^}
after_rev=${AFTER:-HEAD}
count=${COUNT:-5}
benchtime=${BENCHTIME:-20x}
out=${OUT_DIR:-$here}
# golang.org/x/perf's version, as listed for this workplace.
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da

tmp=$(mktemp -d /tmp/msgpath-before-after.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
rm -f "$out/benchstat.txt"

: >"$out/run-info.txt"
for side in before after; do
	if [ "$side" = before ]; then rev=$before_rev; else rev=$after_rev; fi
	sha=$(git -C "$repo" rev-parse --verify "$rev^{commit}")
	echo "$side: $rev = $sha" | tee -a "$out/run-info.txt"
	mkdir "$tmp/$side"
	git -C "$repo" archive "$sha" | tar -x -C "$tmp/$side"
	cp "$here/${side}_bench_test.go.txt" "$tmp/$side/messages/message_path_bench_test.go"
	(cd "$tmp/$side" && go vet ./messages/ && go test -c -o "$tmp/$side.test" ./messages/)
	: >"$out/$side.txt"
done
go version | tee -a "$out/run-info.txt"
echo "cpus: $(nproc); load at start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/run-info.txt"

run() { # side
	(cd "$tmp/$1/messages" && "$tmp/$1.test" -test.run '^$' -test.bench '^BenchmarkMessagePath$' \
		-test.benchtime "$benchtime" -test.count 1) | tee -a "$out/$1.txt"
}
for i in $(seq 1 "$count"); do
	echo "round $i of $count" >&2
	if [ $((i % 2)) = 1 ]; then
		run before
		run after
	else
		run after
		run before
	fi
done

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/run-info.txt"

# benchstat, if the Go module proxy (or the module cache) has it.
if (cd "$tmp" && go run "golang.org/x/perf/cmd/benchstat@$benchstat_version" \
	before="$out/before.txt" after="$out/after.txt") >"$tmp/benchstat.txt" 2>"$tmp/benchstat.err"; then
	cp "$tmp/benchstat.txt" "$out/benchstat.txt"
	cat "$out/benchstat.txt"
else
	echo "benchstat not available; raw outputs in $out/before.txt and $out/after.txt:" >&2
	cat "$tmp/benchstat.err" >&2
fi
