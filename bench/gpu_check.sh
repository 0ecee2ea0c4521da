#!/usr/bin/env bash
# gpu_check.sh: the single-GPU check of RUNNER.md §11, in at most 8 minutes.
#
# On a host with one NVIDIA GPU and PyTorch (no container engine, no network needed) it runs
#   1. probe     nvidia-smi, compute and MIG mode (read only), MPS detection, library versions -> env.json
#   2. selftest  sharebench profile selftest --backend local --telemetry smi
#   3+4. solo and pairs: resnet50 B=64, vgg16 B=32, bert B=16 (L=128), time-slicing, one repeat
#   5. sub-batch b = B/2 when at least 90 s remain (cut short by the time limit otherwise)
#   6. summary   summary.json and a table
# Everything goes under one folder (OUT, default runs/gpu-check/). Each step has its own time
# limit and keeps what it finished. Nothing on the GPU is reconfigured. The script exits
# non-zero only when the probe fails or no measurement succeeded.
#
# usage: bench/gpu_check.sh [--out DIR] [--python PY] [--budget SECONDS] [--no-subbatch] [--dry-run]
#                          [--summary-only]
#   env: OUT, SHAREBENCH_PYTHON (interpreter), SHAREBENCH (the sharebench binary to use)
set -uo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

OUT=${OUT:-runs/gpu-check}
PY=${SHAREBENCH_PYTHON:-python3}
BUDGET=470
SUBBATCH=1
DRY=0
SUMMARY_ONLY=0
need() { [ "$2" -ge 2 ] || { echo "gpu_check: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
	case "$1" in
	--out) need "$1" $#; OUT=$2; shift 2 ;;
	--python) need "$1" $#; PY=$2; shift 2 ;;
	--budget) need "$1" $#; BUDGET=$2; shift 2 ;;
	--no-subbatch) SUBBATCH=0; shift ;;
	--dry-run) DRY=1; shift ;;
	--summary-only) SUMMARY_ONLY=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "gpu_check: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
case "$BUDGET" in '' | *[!0-9]*) echo "gpu_check: --budget '$BUDGET' is not a number of seconds" >&2; exit 2 ;; esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
START=$SECONDS
left() { echo $((BUDGET - (SECONDS - START))); }
log() { printf '[gpu-check %3ds] %s\n' $((SECONDS - START)) "$*" | tee -a "$OUT/gpu-check.log" >&2; }

# run NAME SECONDS CMD...: one step with its own limit; output kept in $OUT/NAME.log.
run() {
	local name=$1 limit=$2
	shift 2
	if [ "$DRY" = 1 ]; then
		printf 'would run (limit %ss): %s\n' "$limit" "$*"
		return 0
	fi
	log "$name: limit ${limit}s: $*"
	timeout --kill-after=15 "$limit" "$@" >"$OUT/$name.log" 2>&1
	local rc=$?
	[ $rc = 124 ] && log "$name: time limit reached; partial results kept"
	log "$name: exit $rc"
	tail -n 20 "$OUT/$name.log" >&2
	return $rc
}

summarize() {
	"$PY" - "$OUT" <<'PYEOF'
import csv, json, os, sys
out = sys.argv[1]
summary = {"note": "one repeat with reused solo runs: no ABBA, no confidence intervals; a smoke signal, not a profile for the paper", "steps": {}}
rows, notes = [], []
for step in ("campaign", "subbatch"):
    d = os.path.join(out, step)
    path = os.path.join(d, "cells.csv")
    if not os.path.exists(path):
        continue
    man = {}
    try:
        man = json.load(open(os.path.join(d, "manifest.json")))
    except Exception:
        pass
    cells = list(csv.DictReader(open(path)))
    summary["steps"][step] = {"cells": man.get("cells"), "sharing_mode": man.get("sharing_mode"), "telemetry": man.get("telemetry"),
                              "sm_clock_min_mhz": man.get("sm_clock_min_mhz"), "sm_clock_median_mhz": man.get("sm_clock_median_mhz"),
                              "throttle": man.get("throttle"), "rows": cells}
    for c in cells:
        rows.append((step, c))
        if c["status"] not in ("ok", "pending"):
            notes.append("%s %s: %s: %s" % (step, c["label"], c["status"], c["reason"]))
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
print("\n%-9s %-30s %-8s %10s %12s %14s %7s %7s" % ("step", "cell", "status", "solo ms", "samples/s", "peak mem GB", "xi_A", "xi_B"))
for step, c in rows:
    def f(k, fmt="%.2f", scale=1.0):
        v = c.get(k) or ""
        return fmt % (float(v) * scale) if v else "-"
    sps = "-"
    if c.get("solo_a_ms") and c["kind"] == "solo":
        sps = "%.0f" % (int(c["batch_a"]) / (float(c["solo_a_ms"]) / 1000))
    print("%-9s %-30s %-8s %10s %12s %14s %7s %7s" % (step, c["label"], c["status"], f("solo_a_ms", "%.1f"), sps,
          f("mem_a_bytes", "%.2f", 1e-9), f("xi_a", "%.3f"), f("xi_b", "%.3f")))
for step, s in summary["steps"].items():
    print("%s: sharing mode %s, telemetry %s, SM clock min/median %s/%s MHz, throttle %s" % (step, s["sharing_mode"], s["telemetry"],
          s["sm_clock_min_mhz"], s["sm_clock_median_mhz"], ", ".join(s["throttle"] or []) or "none"))
for n in notes:
    print("note:", n)
print("note:", summary["note"])
ok = sum(1 for _, c in rows if c["status"] == "ok")
sys.exit(0 if ok > 0 else 1)
PYEOF
}

if [ "$SUMMARY_ONLY" = 1 ]; then
	summarize
	exit $?
fi

if [ "$DRY" = 1 ]; then
	echo "gpu_check (dry run): out=$OUT python=$PY budget=${BUDGET}s subbatch=$SUBBATCH root=$ROOT"
else
	if ! command -v nvidia-smi >/dev/null 2>&1; then
		echo "gpu_check: nvidia-smi not found: this check needs a host with an NVIDIA GPU and its driver" >&2
		exit 2
	fi
	mkdir -p "$OUT" || exit 2
fi

# The binary: SHAREBENCH, bin/sharebench, bin/sharebench-nocgo, or go build when Go exists.
SB=${SHAREBENCH:-}
for b in bin/sharebench bin/sharebench-nocgo; do
	[ -z "$SB" ] && [ -x "$b" ] && SB=$b
done
if [ -z "$SB" ]; then
	if command -v go >/dev/null 2>&1; then
		SB=$OUT/sharebench
		if [ "$DRY" = 1 ]; then
			echo "would build: go build -o $SB ./cmd/sharebench"
		elif ! go build -o "$SB" ./cmd/sharebench >"$OUT/build.log" 2>&1; then
			echo "gpu_check: go build failed (see $OUT/build.log)" >&2
			exit 2
		fi
	else
		echo "gpu_check: no sharebench binary (bin/sharebench, bin/sharebench-nocgo or \$SHAREBENCH) and no Go to build one" >&2
		exit 2
	fi
fi

# 1. probe
if [ "$DRY" = 1 ]; then
	echo "would probe: nvidia-smi -L, --query-gpu, compute/MIG mode, MPS, torch versions -> $OUT/env.json"
else
	log "probe"
	nvidia-smi -L >"$OUT/nvidia-smi-L.txt" 2>&1
	if ! grep -q '^GPU ' "$OUT/nvidia-smi-L.txt"; then
		log "probe failed: nvidia-smi lists no GPU:"
		cat "$OUT/nvidia-smi-L.txt" >&2
		exit 2
	fi
	nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
	timeout 20 nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,driver_version,compute_mode,mig.mode.current,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
		--format=csv >"$OUT/gpu.csv" 2>&1
	timeout 20 nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv >"$OUT/compute-apps.csv" 2>&1
	mps=none
	if pgrep -f nvidia-cuda-mps >/dev/null 2>&1 || [ -p "${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}/control" ]; then
		mps=detected
		log "MPS daemon detected: runs still use a private, empty CUDA_MPS_PIPE_DIRECTORY (time-slicing)"
	fi
	if ! timeout 120 "$PY" - "$OUT/env.json" "$mps" <<'PYEOF' >"$OUT/probe.log" 2>&1; then
import json, platform, subprocess, sys
out, mps = sys.argv[1], sys.argv[2]
env = {"python": platform.python_version(), "mps": mps}
def smi(q):
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:
        return "error: %s" % e
env["gpu"] = smi("name"); env["driver"] = smi("driver_version")
env["compute_mode"] = smi("compute_mode"); env["mig_mode"] = smi("mig.mode.current")
import torch
env["torch"] = torch.__version__
env["cuda"] = torch.version.cuda
env["cudnn"] = torch.backends.cudnn.version()
env["cuda_available"] = torch.cuda.is_available()
for mod in ("torchvision", "transformers"):
    try:
        env[mod] = __import__(mod).__version__
    except Exception as e:
        env[mod] = None
if env["cuda_available"]:
    env["device_name"] = torch.cuda.get_device_name(0)
json.dump(env, open(out, "w"), indent=2)
print(json.dumps(env))
sys.exit(0 if env["cuda_available"] else 1)
PYEOF
		log "probe failed: $PY cannot import torch or sees no CUDA device:"
		cat "$OUT/probe.log" >&2
		exit 2
	fi
	log "probe: $(cat "$OUT/probe.log")"
fi

# 2. selftest
run selftest $(( $(left) < 90 ? $(left) : 90 )) "$SB" profile selftest --backend local --telemetry smi \
	--python "$PY" --out "$OUT/selftest" || log "selftest failed; measuring anyway"

# 3 + 4. solo and pairs, b = B
T=$(( $(left) - 25 ))
if [ "$T" -gt 30 ]; then
	run campaign "$T" "$SB" profile run --spec bench/campaigns/gpu-check.yaml --backend local --python "$PY" --out "$OUT/campaign"
else
	log "campaign skipped: only $(left) s left"
fi

# 5. sub-batch b = B/2, only with at least 90 s left
if [ "$SUBBATCH" = 1 ] && [ "$(left)" -ge 90 ]; then
	run subbatch $(( $(left) - 15 )) "$SB" profile run --spec bench/campaigns/gpu-check-subbatch.yaml --backend local --python "$PY" --out "$OUT/subbatch"
elif [ "$DRY" = 0 ]; then
	log "sub-batch step skipped ($(left) s left, or --no-subbatch)"
fi

# 6. summary
if [ "$DRY" = 1 ]; then
	echo "would summarise $OUT/campaign and $OUT/subbatch into $OUT/summary.json"
	exit 0
fi
summarize
rc=$?
log "done in $((SECONDS - START)) s; results in $OUT"
exit $rc
