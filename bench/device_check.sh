#!/usr/bin/env bash
# device_check.sh: the one-shot device check (docs/runner.md, "Device check").
#
# On a host with an NVIDIA GPU and PyTorch, but no Go and no network, it
#   1. preflight  finds a runnable sharebench binary and python3 on PATH, checks torch,
#                 torchvision and transformers, the GPU (nvidia-smi, torch.cuda) and MPS
#   2. selftest   sharebench profile selftest: protocol round trip and a 3-step real run
#   3. campaign   bench/campaigns/device-check.yaml: the authors' eight models alone and in
#                 four pairs at b = B and B/2, level by level, within the time left
#   4. package    at most 8 files in OUT, none in a subfolder:
#                   device-check.log  preflight.json  summary.json  summary.md
#                   profile.json  manifest.json  cells.csv  run.tar.gz (the run directory)
# in at most --budget seconds (default 400, under 7 minutes): the campaign's budget is what is
# left after the preflight and the selftest, less the time to stop a cell and to package. It
# changes no GPU setting. --dry-run runs the same steps on the CPU with tiny models
# (device-check-dry.yaml), as CI does. It exits non-zero when the preflight fails or no cell was
# measured.
#
# usage: bench/device_check.sh [--out DIR] [--python PY] [--budget SECONDS] [--mps] [--dry-run]
#        bench/device_check.sh --summarize RUN_DIR [--out DIR]
#   env: OUT (default runs/device-check), SHAREBENCH (the binary, and only it; default
#        bin/sharebench-device, else bin/sharebench), SHAREBENCH_PYTHON (default: python3 on PATH)
set -uo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "device_check: $*" >&2; exit 2; }

OUT=${OUT:-runs/device-check}
PY=${SHAREBENCH_PYTHON:-}
BUDGET=400
DRY=0
MPS=0
SUMMARIZE=""
need() { [ "$2" -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--out) need "$1" $#; OUT=$2; shift 2 ;;
	--python) need "$1" $#; PY=$2; shift 2 ;;
	--budget) need "$1" $#; BUDGET=$2; shift 2 ;;
	--mps) MPS=1; shift ;;
	--dry-run) DRY=1; shift ;;
	--summarize) need "$1" $#; SUMMARIZE=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "device_check: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
case "$BUDGET" in '' | *[!0-9]*) die "--budget '$BUDGET' is not a number of seconds" ;; esac
[ "$BUDGET" -ge 120 ] || die "--budget $BUDGET: at least 120 seconds"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
START=$SECONDS
left() { echo $((BUDGET - (SECONDS - START))); }
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/device-check.log
log() { printf '[device-check %3ds] %s\n' $((SECONDS - START)) "$*" | tee -a "$LOG" >&2; }

if [ -z "$PY" ]; then
	PY=$(command -v python3) || die "no python3 on PATH (set SHAREBENCH_PYTHON or --python)"
fi

# summarize RUN_DIR: summary.json and summary.md in OUT from a campaign directory (stdlib only).
summarize() {
	"$PY" - "$1" "$OUT" "$((SECONDS - START))" "$BUDGET" <<'PYEOF'
import csv, json, os, sys
run, out, elapsed, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def load(name, default):
    try:
        with open(os.path.join(run, name)) as f:
            return json.load(f)
    except Exception:
        return default
man, prof = load("manifest.json", {}), load("profile.json", {})
try:
    with open(os.path.join(run, "cells.csv")) as f:
        cells = list(csv.DictReader(f))
except Exception:
    cells = []
pre = {}
try:
    with open(os.path.join(out, "preflight.json")) as f:
        pre = json.load(f)
except Exception:
    pass
counts = {}
for c in cells:
    counts[c["status"]] = counts.get(c["status"], 0) + 1
summary = {
    "mode": pre.get("mode"), "gpu": prof.get("gpu"), "elapsed_s": elapsed, "budget_s": budget,
    "cells": len(cells), "status": counts, "sharing_mode": man.get("sharing_mode"), "precision": man.get("precision"),
    "timing": man.get("timing"), "telemetry": man.get("telemetry"), "sm_clock_min_mhz": man.get("sm_clock_min_mhz"),
    "sm_clock_median_mhz": man.get("sm_clock_median_mhz"), "throttle": man.get("throttle"),
    "mps": man.get("mps"), "mps_unavailable": man.get("mps_unavailable"), "notes": prof.get("notes", []),
    "rows": [{k: c.get(k, "") for k in ("label", "status", "gpus", "cell_mode", "solo_a_ms", "mem_a_bytes", "mem_a_device_bytes",
                                         "xi_a", "xi_b", "reason")} for c in cells],
}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
def num(v, fmt, scale=1.0):
    return fmt % (float(v) * scale) if v not in ("", None) else "-"
lines = ["# Device check: %s" % (prof.get("gpu") or "unknown device"), "",
         "%d cells: %s; %d s of a %d s budget; sharing %s; precision %s; telemetry %s." % (
             len(cells), ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())) or "none", elapsed, budget,
             man.get("sharing_mode") or "-", (man.get("precision") or {}).get("mode", "-"), man.get("telemetry") or "-"), "",
         "| cell | status | solo ms | samples/s | memory GiB | ξ_A | ξ_B |", "|---|---|---:|---:|---:|---:|---:|"]
for c in cells:
    sps = "-"
    if c["kind"] == "solo" and c.get("solo_a_ms"):
        sps = "%.0f" % (int(c["batch_a"]) / (float(c["solo_a_ms"]) / 1000))
    mem = c.get("mem_a_device_bytes") or c.get("mem_a_bytes")
    lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (c["label"], c["status"], num(c.get("solo_a_ms"), "%.1f"), sps,
                 num(mem, "%.2f", 1 / 2**30), num(c.get("xi_a"), "%.3f"), num(c.get("xi_b"), "%.3f")))
lines.append("")
for n in prof.get("notes", []):
    lines.append("- " + n)
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(0 if counts.get("ok", 0) > 0 else 1)
PYEOF
}

if [ -n "$SUMMARIZE" ]; then
	[ -f "$SUMMARIZE/cells.csv" ] || die "$SUMMARIZE has no cells.csv: not a campaign directory"
	summarize "$SUMMARIZE"
	exit $?
fi

: >"$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sharebench-device-check.XXXXXX") || die "cannot create a work directory"
trap 'rm -rf "$WORK"' EXIT
mode=gpu
spec=bench/campaigns/device-check.yaml
if [ "$DRY" = 1 ]; then
	mode=cpu
	spec=bench/campaigns/device-check-dry.yaml
fi
log "device check ($mode): budget ${BUDGET}s, out $OUT, python $PY"

# 1. preflight: a binary that runs (a cgo build may need a newer libc than the host has).
SB=""
candidates=(bin/sharebench-device bin/sharebench)
[ -n "${SHAREBENCH:-}" ] && candidates=("$SHAREBENCH")
for b in "${candidates[@]}"; do
	[ -x "$b" ] || continue
	if "$b" help >"$WORK/binary.log" 2>&1; then
		SB=$b
		break
	fi
	log "binary $b does not run here: $(head -c 300 "$WORK/binary.log")"
done
[ -n "$SB" ] || die "no runnable sharebench binary: run 'make device-bin' where Go is installed and bring bin/sharebench-device (or set SHAREBENCH)"
log "binary: $SB ($(wc -c <"$SB") bytes)"
mkdir -p "$WORK/preflight"
if [ "$mode" = gpu ]; then
	command -v nvidia-smi >/dev/null 2>&1 || die "nvidia-smi not found: this check needs a host with an NVIDIA GPU and its driver (--dry-run runs it on the CPU)"
	timeout 30 nvidia-smi >"$WORK/preflight/nvidia-smi.txt" 2>&1
	timeout 30 nvidia-smi -L >"$WORK/preflight/nvidia-smi-L.txt" 2>&1
	grep -q '^GPU ' "$WORK/preflight/nvidia-smi-L.txt" || die "nvidia-smi lists no GPU: $(head -c 300 "$WORK/preflight/nvidia-smi-L.txt")"
	timeout 30 nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv >"$WORK/preflight/compute-apps.csv" 2>&1
fi
if ! timeout 120 "$PY" - "$OUT/preflight.json" "$mode" "$SB" <<'PYEOF' >"$WORK/preflight/preflight.log" 2>&1; then
import json, os, platform, shutil, subprocess, sys
out, mode, sb = sys.argv[1], sys.argv[2], sys.argv[3]
rep = {"mode": mode, "python": sys.executable, "python_version": platform.python_version(), "cpus": os.cpu_count(),
       "binary": sb, "binary_bytes": os.path.getsize(sb), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
try:
    rep["cpu_affinity"] = sorted(os.sched_getaffinity(0))
except Exception:
    pass
ok = True
for mod in ("torch", "torchvision", "transformers"):
    try:
        rep[mod] = __import__(mod).__version__
    except Exception as exc:
        rep[mod] = None
        rep[mod + "_error"] = repr(exc)[:300]
        if mod != "transformers":
            ok = False
if rep["torch"]:
    import torch
    rep["cuda"] = torch.version.cuda
    rep["cuda_available"] = torch.cuda.is_available()
    if rep["cuda_available"]:
        rep["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        rep["cudnn"] = torch.backends.cudnn.version()
    elif mode == "gpu":
        ok = False
if mode == "gpu":
    q = "index,uuid,name,memory.total,memory.used,driver_version,compute_mode,mig.mode.current,clocks.sm,clocks.max.sm,power.draw,temperature.gpu"
    r = subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv"], capture_output=True, text=True, timeout=30)
    rep["nvidia_smi"] = r.stdout.strip().splitlines()
    pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
    rep["mps_control_pipe"] = os.path.exists(os.path.join(pipe, "control"))
    rep["mps_control"] = shutil.which("nvidia-cuda-mps-control")
rep["ok"] = ok
with open(out, "w") as f:
    json.dump(rep, f, indent=2)
    f.write("\n")
print(json.dumps(rep))
sys.exit(0 if ok else 1)
PYEOF
	cat "$WORK/preflight/preflight.log" >>"$LOG"
	die "preflight failed: $PY lacks torch or torchvision$([ "$mode" = gpu ] && echo ', or torch sees no CUDA device') (details in $OUT/preflight.json and $LOG)"
fi
log "preflight: $(tail -n 1 "$WORK/preflight/preflight.log" | head -c 600)"

# 2. selftest (at most 90 s).
st=(profile selftest --backend local --python "$PY" --out "$WORK/selftest" --timeout 80s)
[ "$mode" = cpu ] && st+=(--device cpu)
log "selftest: $SB ${st[*]}"
if ! timeout --kill-after=10 90 "$SB" "${st[@]}" >>"$LOG" 2>&1; then
	log "selftest failed (see above); measuring anyway"
fi

# 3. campaign: what is left, less a cell's overrun (60 s) and the packaging (20 s).
hard=$(( $(left) - 20 ))
cb=$(( hard - 60 ))
if [ "$cb" -lt 30 ]; then
	log "only $(left) s left: no time for the campaign"
else
	sed "s/^budget: .*/budget: ${cb}s/" "$spec" >"$WORK/campaign.yaml"
	[ "$MPS" = 1 ] && echo "modes: [timeslice, mps]" >>"$WORK/campaign.yaml"
	log "campaign $spec: budget ${cb}s (hard limit ${hard}s)"
	timeout -s TERM --kill-after=15 "$hard" "$SB" profile run --spec "$WORK/campaign.yaml" --python "$PY" --out "$WORK/run" >>"$LOG" 2>&1
	rc=$?
	[ $rc = 124 ] && log "campaign stopped at its hard limit; finished cells are kept"
	log "campaign: exit $rc"
fi

# 4. package: the run directory as one archive, its main outputs and a summary beside it.
for f in profile.json manifest.json cells.csv; do
	[ -f "$WORK/run/$f" ] && cp "$WORK/run/$f" "$OUT/$f"
done
cp "$WORK/campaign.yaml" "$WORK/preflight/" 2>/dev/null
summarize "$WORK/run" >>"$LOG" 2>&1
src=$?
tar -czf "$OUT/run.tar.gz" -C "$WORK" $(cd "$WORK" && ls -d run selftest preflight 2>/dev/null) || log "packaging failed"
n=$(find "$OUT" -mindepth 1 | wc -l)
log "done in $((SECONDS - START)) s: $n files in $OUT ($(du -sh "$OUT" | cut -f1))"
[ "$n" -le 8 ] || log "warning: more than 8 files in $OUT"
[ -f "$OUT/summary.md" ] && cat "$OUT/summary.md" >&2
exit $src
