#!/usr/bin/env bash
# device_shot.sh: one call on a lent GPU host (docs/runner.md, "Device shot"): the device check,
# then, in the time left, a physical replay of a small trace with the profile just measured.
#
#   1. check    bench/device_check.sh --no-mps (its budget: --check-budget): the eight models
#               alone and in all 36 pairs at b = B and B/2, time-sliced -> profile.json
#   2. trace    replay8.csv, made from that profile: one job of each model it has, at its
#               default batch, each job's iterations sized to a fixed solo time (4 to 10 s), one
#               arrival every 3 s in a fixed order; one GPU
#   3. replay   for each policy (--policies, default sjf-bsbf,sjf-ffs): the simulation with the
#               measured profile predicts the makespan; when it fits the time left (makespan
#               x 1.3 + 30 s for the launches), sharebench replay --backend local --simulate
#               runs the trace for real and compares it with its simulation (fidelity/)
#   4. package  at most 8 files in OUT, none in a subfolder:
#                 shot.log  check.tar.gz (the check's files)  profile.json  summary.md
#                 replay.tar.gz (trace, replay and simulation directories)  fidelity-POLICY.md
# within --budget seconds (default 560). The MPS pairs are left out: the time goes to the replay.
# --dry-run rehearses the same steps on the CPU with tiny models (the check's --dry-run, the
# replay's --device cpu --tiny); it is not part of CI (make device-check-dry is).
#
# usage: bench/device_shot.sh [--out DIR] [--python PY] [--budget S] [--check-budget S]
#                             [--policies P1,P2] [--journal FILE] [--dry-run]
#   --journal FILE: the check resumes that earlier campaign (bench/device_check.sh --journal)
#   env: OUT (default runs/device-shot), SHAREBENCH, SHAREBENCH_PYTHON as for device_check.sh
set -uo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "device_shot: $*" >&2; exit 2; }

OUT=${OUT:-runs/device-shot}
PY=${SHAREBENCH_PYTHON:-}
BUDGET=560
CHECK=400
POLICIES=sjf-bsbf,sjf-ffs
DRY=0
JOURNAL=""
PACK=15
need() { [ "$2" -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--out) need "$1" $#; OUT=$2; shift 2 ;;
	--python) need "$1" $#; PY=$2; shift 2 ;;
	--budget) need "$1" $#; BUDGET=$2; shift 2 ;;
	--check-budget) need "$1" $#; CHECK=$2; shift 2 ;;
	--policies) need "$1" $#; POLICIES=$2; shift 2 ;;
	--journal) need "$1" $#; JOURNAL=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") || die "--journal $2: no such directory"; shift 2 ;;
	--dry-run) DRY=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "device_shot: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
for v in "$BUDGET" "$CHECK"; do
	case "$v" in '' | *[!0-9]*) die "'$v' is not a number of seconds" ;; esac
done
[ "$CHECK" -lt "$BUDGET" ] || die "--check-budget $CHECK must be under --budget $BUDGET"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
START=$SECONDS
left() { echo $((BUDGET - (SECONDS - START))); }
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/shot.log
: >"$LOG"
log() { printf '[device-shot %3ds] %s\n' $((SECONDS - START)) "$*" | tee -a "$LOG" >&2; }
if [ -z "$PY" ]; then
	PY=$(command -v python3) || die "no python3 on PATH (set SHAREBENCH_PYTHON or --python)"
fi
SB=${SHAREBENCH:-bin/sharebench-device}
[ -x "$SB" ] || SB=bin/sharebench
[ -x "$SB" ] || die "no sharebench binary: run 'make device-bin' where Go is installed"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sharebench-device-shot.XXXXXX") || die "cannot create a work directory"
trap 'rm -rf "$WORK"' EXIT
log "device shot: budget ${BUDGET}s (check ${CHECK}s), policies $POLICIES, out $OUT"

# 1. the check, into the work directory (its own 8 files travel as one archive).
check=(--out "$WORK/check" --python "$PY" --budget "$CHECK" --no-mps)
[ "$DRY" = 1 ] && check+=(--dry-run)
[ -n "$JOURNAL" ] && check+=(--journal "$JOURNAL")
SHAREBENCH=$SB bench/device_check.sh "${check[@]}" 2>&1 | tee -a "$LOG" >&2
log "check: exit ${PIPESTATUS[0]}"
for f in profile.json summary.md; do
	[ -f "$WORK/check/$f" ] && cp "$WORK/check/$f" "$OUT/$f"
done
tar -czf "$OUT/check.tar.gz" -C "$WORK" check 2>>"$LOG"

# 2. the trace, from the measured profile.
mkdir -p "$WORK/replay"
if [ -f "$OUT/profile.json" ] && "$PY" - "$OUT/profile.json" "$WORK/replay/replay8.csv" <<'PYEOF' >>"$LOG" 2>&1; then
import json, math, sys
prof = json.load(open(sys.argv[1]))
# A fixed order of arrival and a fixed solo time per job, so that the trace depends only on the
# profile: short and long jobs interleaved, the two language models apart.
order = ["resnet18", "bert", "dqn", "vgg16", "shufflenet_v2_x1_0", "gpt2", "a2c", "vgg19"]
solo_s = [8, 6, 4, 10, 6, 8, 4, 10]
models = {m["name"]: m for m in prof["models"]}
rows = ["job_id,submit_s,num_gpu,model,batch_size,iterations,iteration_time_s"]
for i, name in enumerate(order):
    m = models.get(name)
    if not m:
        print("replay trace: %s is not in the profile: left out" % name)
        continue
    cfg = next((c for c in m["configs"] if c["batch"] == m["default_batch"] and c["sub_batch"] == c["batch"] and "1" in c["iter_s"]), None)
    if not cfg:
        print("replay trace: %s has no solo time at its default batch: left out" % name)
        continue
    step = cfg["iter_s"]["1"]
    iters = max(10, int(math.ceil(solo_s[i] / step)))
    rows.append("%d,%d,1,%s,%d,%d,%.6f" % (i + 1, 3 * i, name, cfg["batch"], iters, step))
if len(rows) < 3:
    sys.exit("replay trace: fewer than two jobs")
open(sys.argv[2], "w").write("\n".join(rows) + "\n")
print("replay trace: %d jobs" % (len(rows) - 1))
PYEOF
	log "trace: $(($(wc -l <"$WORK/replay/replay8.csv") - 1)) jobs"
	# 3. the replays, each when its simulation says it fits the time left.
	# Each workload gets the CPU threads it had in the check (its campaign's workload.threads).
	rp=(--trace "$WORK/replay/replay8.csv" --profile "$OUT/profile.json" --backend local --gpus 1 --python "$PY" --simulate --quiet)
	if [ "$DRY" = 1 ]; then
		rp+=(--device cpu --tiny --threads 1)
	else
		rp+=(--threads 4)
	fi
	IFS=, read -ra pols <<<"$POLICIES"
	for p in "${pols[@]}"; do
		"$SB" simulate --trace "$WORK/replay/replay8.csv" --cluster 1x1 --policy "$p" --profile "$OUT/profile.json" \
			--out "$WORK/replay/predict-$p" >>"$LOG" 2>&1 || { log "$p: the simulation failed"; continue; }
		mk=$("$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["makespan_s"] * 1.3) + 30)' "$WORK/replay/predict-$p/summary.json")
		room=$(($(left) - PACK))
		if [ "$mk" -gt "$room" ]; then
			log "$p: replay left out: it needs about ${mk}s, ${room}s are left"
			continue
		fi
		log "$p: replay (about ${mk}s of ${room}s left)"
		timeout -s TERM --kill-after=10 "$room" "$SB" replay "${rp[@]}" --policy "$p" --out "$WORK/replay/$p" >>"$LOG" 2>&1
		log "$p: replay exit $?"
		[ -f "$WORK/replay/$p/fidelity/fidelity.md" ] && cp "$WORK/replay/$p/fidelity/fidelity.md" "$OUT/fidelity-$p.md"
	done
else
	log "no profile or no trace: no replay"
fi

# 4. package.
tar -czf "$OUT/replay.tar.gz" -C "$WORK" replay 2>>"$LOG" || log "packaging the replay failed"
n=$(find "$OUT" -mindepth 1 | wc -l)
log "done in $((SECONDS - START)) s: $n files in $OUT ($(du -sh "$OUT" | cut -f1))"
[ "$n" -le 8 ] || log "warning: more than 8 files in $OUT"
for f in "$OUT"/fidelity-*.md; do
	[ -f "$f" ] && head -n 30 "$f" >&2
done
[ -f "$OUT/profile.json" ]
