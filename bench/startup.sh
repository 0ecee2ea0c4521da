#!/usr/bin/env bash
# Start-up cost of a sharebench command against a minimal Go binary built here with the same
# toolchain: the median wall time of RUNS starts of each, interleaved so that a change in the
# machine's load reaches both alike, and the CPU time (user + system) per start, which load
# disturbs much less than wall time.
#
#   bench/startup.sh [BINARY] [ARGS...]      default: bin/sharebench --version; RUNS=200
set -euo pipefail
runs=${RUNS:-200}
bin=${1:-bin/sharebench}
shift || true
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--version)
if [ ! -x "$bin" ]; then
	echo "startup.sh: $bin is not an executable (make build?)" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/main.go" <<'EOF'
package main

import "os"

func main() { os.Stdout.WriteString("minimal 1.0\n") }
EOF
(cd "$tmp" && go mod init minimal >/dev/null 2>&1 && go build -o minimal .)
minimal=$tmp/minimal

# Timestamps are $EPOCHREALTIME without its decimal point (microseconds), read without forking.
wall_a=() wall_b=()
for ((i = 0; i < runs; i++)); do
	t0=${EPOCHREALTIME/[.,]/}
	"$bin" "${args[@]}" >/dev/null
	t1=${EPOCHREALTIME/[.,]/}
	"$minimal" "${args[@]}" >/dev/null
	t2=${EPOCHREALTIME/[.,]/}
	wall_a+=($((t1 - t0)))
	wall_b+=($((t2 - t1)))
done

# cpu_ms runs the command RUNS times in a subshell and prints its children's CPU time per run.
cpu_ms() {
	(
		for ((i = 0; i < runs; i++)); do "$@" >/dev/null; done
		# times must run in this shell, not in a pipeline's subshell, whose children are none.
		times >"$tmp/times"
		awk -v n="$runs" 'NR == 2 {
			split($1, u, /[ms]/); split($2, s, /[ms]/)
			printf "%.2f", ((u[1] * 60 + u[2]) + (s[1] * 60 + s[2])) * 1000 / n
		}' "$tmp/times"
	)
}

median_ms() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m / 1000}'; }

wa=$(median_ms "${wall_a[@]}")
wb=$(median_ms "${wall_b[@]}")
ca=$(cpu_ms "$bin" "${args[@]}")
cb=$(cpu_ms "$minimal")
echo "$(basename "$bin") ${args[*]}: wall median $wa ms, CPU $ca ms per start ($runs starts)"
echo "minimal Go binary:  wall median $wb ms, CPU $cb ms per start"
awk -v wa="$wa" -v wb="$wb" -v ca="$ca" -v cb="$cb" 'BEGIN {printf "ratio: wall %.2f, CPU %.2f\n", wa / wb, ca / cb}'
