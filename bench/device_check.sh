#!/usr/bin/env bash
# device_check.sh: the one-shot device check (docs/runner.md, "Device check").
#
# On a host with an NVIDIA GPU and PyTorch, but no Go and no network, it
#   1. plan       projects the GPU time of the whole shot (sharebench profile plan, from the
#                 published step times) and stops at once when it would not fit the budget
#   2. preflight  finds a runnable sharebench binary and python3 on PATH, checks torch,
#                 torchvision and transformers, the GPU (nvidia-smi, torch.cuda) and MPS
#   3. selftest   sharebench profile selftest: protocol round trip and a 3-step real run
#   4. campaign   bench/campaigns/device-check.yaml: the authors' eight models alone and in all
#                 36 pairs (each with itself included) at b = B and B/2, time-slicing, level by
#                 level on warm workers, within the time left; then the same pairs under MPS
#                 when a projection from the step times just measured says they fit what is
#                 left (--mps: always, as far as the budget goes; --no-mps: never)
#   5. package    at most 8 files in OUT, none in a subfolder:
#                   device-check.log  preflight.json  summary.json  summary.md
#                   profile.json  manifest.json  cells.csv  run.tar.gz (the run directory)
# in at most --budget seconds (default 400, under 7 minutes): the campaign's budget is what is
# left after the preflight and the selftest, less the time to stop a cell and to package. It
# changes no GPU setting. --dry-run runs the same steps on the CPU with tiny models
# (device-check-dry.yaml), as CI does; its plan step still projects the GPU campaign. It exits
# non-zero when the plan does not fit, the preflight fails or no cell was measured.
#
# --journal FILE resumes an earlier shot's campaign: its journal seeds the run directory, the cells
# it holds are skipped and its failed ones run again (results/profiles/h200/journal.jsonl).
#
# usage: bench/device_check.sh [--out DIR] [--python PY] [--budget SECONDS] [--mps|--no-mps] [--journal FILE] [--dry-run]
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
MPS=auto
SUMMARIZE=""
JOURNAL=""
# What the projection assumes for the steps around the campaign (the GPU's, in the dry run
# too): preflight and selftest; and what the script keeps after the campaign: the overrun of
# the cell running at the budget's end and the workers' exit (OVERRUN), the packaging (PACK).
PRE_S=40
OVERRUN=30
PACK=20
need() { [ "$2" -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--out) need "$1" $#; OUT=$2; shift 2 ;;
	--python) need "$1" $#; PY=$2; shift 2 ;;
	--budget) need "$1" $#; BUDGET=$2; shift 2 ;;
	--mps) MPS=on; shift ;;
	--no-mps) MPS=off; shift ;;
	--dry-run) DRY=1; shift ;;
	--summarize) need "$1" $#; SUMMARIZE=$2; shift 2 ;;
	--journal) need "$1" $#; JOURNAL=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "device_check: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
case "$BUDGET" in '' | *[!0-9]*) die "--budget '$BUDGET' is not a number of seconds" ;; esac
[ "$BUDGET" -ge 120 ] || die "--budget $BUDGET: at least 120 seconds"

if [ -n "$JOURNAL" ]; then
	[ -f "$JOURNAL" ] || die "--journal $JOURNAL: no such file"
	JOURNAL=$(cd "$(dirname "$JOURNAL")" && pwd)/$(basename "$JOURNAL")
fi
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

# summarize RUN_DIR [PLAN_JSON [MEASURED_PLAN_JSON]]: summary.json and summary.md in OUT from a
# campaign directory and the projections (stdlib only).
summarize() {
	"$PY" - "$1" "$OUT" "$((SECONDS - START))" "$BUDGET" "${2:-}" "${3:-}" <<'PYEOF'
import csv, datetime, json, os, sys
run, out, elapsed, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
plan_path, measured_path = sys.argv[5], sys.argv[6]
def load(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return default
man, prof = load(os.path.join(run, "manifest.json"), {}), load(os.path.join(run, "profile.json"), {})
pre = load(os.path.join(out, "preflight.json"), {})
plan = load(plan_path, {}) if plan_path else {}
measured_plan = load(measured_path, {}) if measured_path else {}
try:
    with open(os.path.join(run, "cells.csv")) as f:
        cells = list(csv.DictReader(f))
except Exception:
    cells = []
def when(t):
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
# The journal: per cell its wall time and the windows of its runs (the rest is setup: the go and
# stop round trips, telemetry, bookkeeping); per group of warm workers its start and warm-up.
timing, workers = {}, []
try:
    with open(os.path.join(run, "journal.jsonl")) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("record") == "workers":
                workers.append({"group": rec["group"], "workers": len(rec.get("workers") or []), "retired": rec.get("retired", 0),
                                "retire_s": rec.get("retire_s", 0), "load_s": rec.get("load_s", 0), "warm_s": rec.get("warm_s", 0),
                                "failed": [w["key"] + ": " + w.get("reason", "") for w in rec.get("workers") or [] if w.get("status") != "ok"]})
            elif rec.get("record") == "cell":
                # window: the runs' overlap windows, the steps that count; run: from go to the
                # end of each run (the steps outside the window and those in flight at stop
                # included); setup: the rest of the cell's wall time.
                wall = (when(rec["finished"]) - when(rec["started"])).total_seconds()
                runs = rec.get("runs") or []
                window = sum(r.get("window_s") or 0 for r in runs)
                measure = sum(r.get("measure_s") or r.get("window_s") or 0 for r in runs)
                timing[rec["cell"]["id"]] = {"wall_s": wall, "window_s": window, "run_s": measure, "setup_s": max(wall - measure, 0)}
except OSError:
    pass
projected = {c["index"]: c for c in plan.get("cells", [])}
counts = {}
for c in cells:
    counts[c["status"]] = counts.get(c["status"], 0) + 1
rows = []
for c in cells:
    row = {k: c.get(k, "") for k in ("label", "status", "gpus", "cell_mode", "solo_a_ms", "mem_a_bytes", "mem_a_device_bytes", "xi_a", "xi_b", "reason")}
    t = timing.get(c["cell_id"])
    if t:
        row.update({k: round(v, 3) for k, v in t.items()})
    p = projected.get(int(c["index"]))
    if p and p.get("kind") == c["kind"]:
        row["projected_s"] = round(p["window_s"] + p["setup_s"], 3)
    rows.append(row)
measured = {"campaign_cells_s": round(sum(t["wall_s"] for t in timing.values()), 1),
            "window_s": round(sum(t["window_s"] for t in timing.values()), 1),
            "run_s": round(sum(t["run_s"] for t in timing.values()), 1),
            "setup_s": round(sum(t["setup_s"] for t in timing.values()), 1),
            "workers_s": round(sum(w["retire_s"] + w["load_s"] + w["warm_s"] for w in workers), 1)}
def projection(p):
    if not p:
        return None
    keys = ("shot_s", "campaign_s", "window_s", "setup_s", "workers_s", "budget_s", "fits", "short", "sources", "assumptions")
    return {k: p.get(k) for k in keys}
summary = {
    "mode": pre.get("mode"), "gpu": prof.get("gpu"), "elapsed_s": elapsed, "budget_s": budget,
    "cells": len(cells), "status": counts, "sharing_mode": man.get("sharing_mode"), "precision": man.get("precision"),
    "timing": man.get("timing"), "telemetry": man.get("telemetry"), "sm_clock_min_mhz": man.get("sm_clock_min_mhz"),
    "sm_clock_median_mhz": man.get("sm_clock_median_mhz"), "throttle": man.get("throttle"),
    "mps": man.get("mps"), "mps_unavailable": man.get("mps_unavailable"), "notes": prof.get("notes", []),
    "projection": projection(plan), "projection_at_measured_step_times": projection(measured_plan),
    "measured": measured, "workers": workers, "rows": rows,
}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
def num(v, fmt, scale=1.0):
    return fmt % (float(v) * scale) if v not in ("", None) else "-"
dry = pre.get("mode") == "cpu"
# A negative elapsed time: summarized afterwards (--summarize), when the shot's time is not known.
took = "%d s of a %d s budget" % (elapsed, budget) if elapsed >= 0 else "summarized from the run directory"
lines = ["# Device check: %s" % (prof.get("gpu") or "unknown device"), "",
         "%d cells: %s; %s; sharing %s; precision %s; telemetry %s." % (
             len(cells), ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())) or "none", took,
             man.get("sharing_mode") or "-", (man.get("precision") or {}).get("mode", "-"), man.get("telemetry") or "-"), ""]
if plan:
    lines.append("Projected GPU time of the shot (a projection, not a measurement): %.0f s of a %.0f s budget, of which the "
                 "campaign %.0f s (windows %.0f s, run overheads %.0f s, warm workers %.0f s); %d of %d cells would end at "
                 "max_seconds at these step times. Step times: %s. Assumed: %s." % (
                     plan["shot_s"], plan.get("budget_s") or budget, plan["campaign_s"], plan["window_s"], plan["setup_s"],
                     plan["workers_s"], plan["short"], len(plan["cells"]), "; ".join(plan.get("sources", [])),
                     ", ".join("%s %g" % kv for kv in sorted(plan.get("assumptions", {}).items()))))
    lines.append("")
lines.append("Measured%s: the cells took %.0f s: their runs %.0f s from go to stop (windows %.0f s), setup %.0f s; the warm "
             "workers took %.0f s to retire, start and warm up." % (
                 " (CPU rehearsal with tiny models: not GPU times)" if dry else "", measured["campaign_cells_s"], measured["run_s"],
                 measured["window_s"], measured["setup_s"], measured["workers_s"]))
if measured_plan:
    lines.append("The same campaign projected at this run's own solo step times: %.0f s (windows %.0f s, run overheads %.0f s, "
                 "warm workers %.0f s)." % (measured_plan["campaign_s"], measured_plan["window_s"], measured_plan["setup_s"],
                                            measured_plan["workers_s"]))
lines.append("")
if workers:
    lines += ["| warm workers | started | retired | retire s | load s (at once) | warm-up s (one at a time) |", "|---|---:|---:|---:|---:|---:|"]
    for w in workers:
        lines.append("| %s | %d | %d | %.1f | %.1f | %.1f |" % (w["group"], w["workers"], w["retired"], w["retire_s"], w["load_s"], w["warm_s"]))
        for f in w["failed"]:
            lines.append("|  failed: %s | | | | | |" % f.replace("|", "/"))
    lines.append("")
lines += ["| cell | status | solo ms | samples/s | memory GiB | ξ_A | ξ_B | window s | run s | setup s | GPU projected s |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for c, row in zip(cells, rows):
    sps = "-"
    if c["kind"] == "solo" and c.get("solo_a_ms"):
        sps = "%.0f" % (int(c["batch_a"]) / (float(c["solo_a_ms"]) / 1000))
    mem = c.get("mem_a_device_bytes") or c.get("mem_a_bytes")
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        c["label"], c["status"], num(c.get("solo_a_ms"), "%.1f"), sps, num(mem, "%.2f", 1 / 2**30), num(c.get("xi_a"), "%.3f"),
        num(c.get("xi_b"), "%.3f"), num(row.get("window_s"), "%.2f"), num(row.get("run_s"), "%.2f"), num(row.get("setup_s"), "%.2f"),
        num(row.get("projected_s"), "%.2f")))
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
	START=$((SECONDS + 1)) # elapsed -1: not the time of a shot
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

# 1. a binary that runs (a cgo build may need a newer libc than the host has), and the plan.
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
# The GPU campaign projected from the published step times (in the dry run too: it rehearses
# this very check) must fit the budget with the time assumed for the steps around it, before
# any device time is spent. The projection with the MPS pairs is for the log only: whether
# they run is decided after the time-slicing levels, from the step times measured there.
gpu_plan=(profile plan --budget "${BUDGET}s" --fixed "${PRE_S}s" --reserve "$((OVERRUN + PACK))s")
if ! "$SB" "${gpu_plan[@]}" --spec bench/campaigns/device-check.yaml --json "$WORK/preflight/plan.json" >"$WORK/preflight/plan.txt" 2>&1; then
	cat "$WORK/preflight/plan.txt" >>"$LOG"
	die "the device check's plan does not fit its ${BUDGET}s budget: $(grep '^projected campaign' "$WORK/preflight/plan.txt" | head -n 1) ($(tail -n 1 "$WORK/preflight/plan.txt" | head -c 400))"
fi
cat "$WORK/preflight/plan.txt" >>"$LOG"
log "plan: $(grep '^projected campaign' "$WORK/preflight/plan.txt")"
{ cat bench/campaigns/device-check.yaml; echo "modes: [timeslice, mps]"; } >"$WORK/preflight/device-check-mps.yaml"
"$SB" "${gpu_plan[@]}" --spec "$WORK/preflight/device-check-mps.yaml" >"$WORK/preflight/plan-mps.txt" 2>&1
log "plan with the MPS pairs after both levels: $(grep '^projected campaign' "$WORK/preflight/plan-mps.txt")"
# 2. preflight: the GPU and the interpreter's packages.
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

# 3. selftest (at most 90 s).
st=(profile selftest --backend local --python "$PY" --out "$WORK/selftest" --timeout 80s)
[ "$mode" = cpu ] && st+=(--device cpu)
log "selftest: $SB ${st[*]}"
if ! timeout --kill-after=10 90 "$SB" "${st[@]}" >>"$LOG" 2>&1; then
	log "selftest failed (see above); measuring anyway"
fi

# 4. campaign: what is left, less a cell's overrun and the packaging, as a hard limit; its
# budget stops new cells before that. The MPS pairs follow in the same directory (the done
# time-slicing cells are skipped) when --mps asks for them, or by default when the campaign
# projected at the solo step times just measured says that they fit what is left.
campaign() { # campaign SPEC LABEL
	local hard=$(( $(left) - PACK )) cb
	cb=$(( hard - OVERRUN ))
	if [ "$cb" -lt 30 ]; then
		log "only $(left) s left: no time for the $2"
		return 1
	fi
	sed "s/^budget: .*/budget: ${cb}s/" "$1" >"$WORK/campaign.yaml"
	log "$2 $1: budget ${cb}s (hard limit ${hard}s)"
	local resume=()
	[ -n "$JOURNAL" ] && resume=(--retry-failed)
	timeout -s TERM --kill-after=15 "$hard" "$SB" profile run --spec "$WORK/campaign.yaml" --python "$PY" --out "$WORK/run" "${resume[@]}" >>"$LOG" 2>&1
	local rc=$?
	[ $rc = 124 ] && log "$2 stopped at its hard limit; finished cells are kept"
	log "$2: exit $rc"
}
if [ -n "$JOURNAL" ]; then
	mkdir -p "$WORK/run" && cp "$JOURNAL" "$WORK/run/journal.jsonl" || die "cannot seed the run directory with $JOURNAL"
	log "resuming the campaign of $JOURNAL"
fi
campaign "$spec" campaign
if [ "$MPS" != off ] && [ -f "$WORK/run/journal.jsonl" ]; then
	{ cat "$spec"; echo "modes: [timeslice, mps]"; } >"$WORK/preflight/campaign-mps.yaml"
	run_mps=$([ "$MPS" = on ] && echo 1 || echo 0)
	if [ "$MPS" = auto ]; then
		if "$SB" profile plan --spec "$WORK/preflight/campaign-mps.yaml" --step-times "measured:$WORK/run" --skip-done "$WORK/run" \
			--budget "$(left)s" --fixed 0s --reserve "$((OVERRUN + PACK))s" >"$WORK/preflight/plan-mps-measured.txt" 2>&1; then
			run_mps=1
			log "MPS pairs: $(grep '^projected campaign' "$WORK/preflight/plan-mps-measured.txt") at the measured step times: measuring them"
		else
			log "MPS pairs left out: $(grep '^projected campaign' "$WORK/preflight/plan-mps-measured.txt" || tail -n 1 "$WORK/preflight/plan-mps-measured.txt") at the measured step times (--mps measures them as far as the budget goes)"
		fi
	fi
	[ "$run_mps" = 1 ] && campaign "$WORK/preflight/campaign-mps.yaml" "MPS pairs"
fi
# The campaign that ran, projected at its own solo step times: how far the projection's model is
# from the measured times (summary).
"$SB" profile plan --spec "$WORK/campaign.yaml" --step-times "measured:$WORK/run" --fixed 0s --reserve 0s \
	--json "$WORK/preflight/plan-measured.json" >"$WORK/preflight/plan-measured.txt" 2>&1 ||
	log "no projection at the measured step times: $(tail -n 1 "$WORK/preflight/plan-measured.txt" | head -c 300)"

# 5. package: the run directory as one archive, its main outputs and a summary beside it.
for f in profile.json manifest.json cells.csv; do
	[ -f "$WORK/run/$f" ] && cp "$WORK/run/$f" "$OUT/$f"
done
cp "$WORK/campaign.yaml" "$WORK/preflight/" 2>/dev/null
summarize "$WORK/run" "$WORK/preflight/plan.json" "$WORK/preflight/plan-measured.json" >>"$LOG" 2>&1
src=$?
tar -czf "$OUT/run.tar.gz" -C "$WORK" $(cd "$WORK" && ls -d run selftest preflight 2>/dev/null) || log "packaging failed"
n=$(find "$OUT" -mindepth 1 | wc -l)
log "done in $((SECONDS - START)) s: $n files in $OUT ($(du -sh "$OUT" | cut -f1))"
[ "$n" -le 8 ] || log "warning: more than 8 files in $OUT"
[ -f "$OUT/summary.md" ] && cat "$OUT/summary.md" >&2
exit $src
