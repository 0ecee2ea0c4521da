#!/usr/bin/env bash
# Regenerates the imported profiles of this directory from the public data sets with the exact
# commands recorded in their provenance (README.md). The output is byte-identical on every run.
#
#   results/profiles/regenerate.sh            rewrite the profiles
#   results/profiles/regenerate.sh --check    regenerate into a temporary directory and diff
#
# The data directory is $SHAREBENCH_DATA, else ../shared/data or shared/data next to the module.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${SHAREBENCH_DATA:-}
if [ -z "$data" ]; then
	for d in "$root/../shared/data" "$root/shared/data"; do
		if [ -d "$d/profiles" ]; then data=$d; break; fi
	done
fi
if [ -z "$data" ] || [ ! -d "$data/profiles" ]; then
	echo "regenerate.sh: data directory not found; set SHAREBENCH_DATA" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/sharebench" ./cmd/sharebench)
out=$here
if [ "${1:-}" = "--check" ]; then
	out=$tmp/out
	mkdir -p "$out"
fi

cd "$data/profiles"
sb=$tmp/sharebench
for gpu in v100 p100 k80; do
	"$sb" profile import --from gavel --gpu "$gpu" gavel-throughputs/simulation_throughputs.json --out "$out/gavel-$gpu.json"
done
"$sb" profile import --from blox --relative blox-colocation/norm_speed.csv --out "$out/blox.json"
"$sb" profile import --from pollux pollux-step-times --out "$out/pollux.json"
chmod 644 "$out"/*.json

if [ "${1:-}" = "--check" ]; then
	for f in gavel-v100.json gavel-p100.json gavel-k80.json blox.json pollux.json; do
		cmp "$here/$f" "$out/$f"
	done
	echo "regenerate.sh: all profiles are up to date"
fi
