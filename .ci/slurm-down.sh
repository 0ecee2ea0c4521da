#!/usr/bin/env bash
# slurm-down.sh DIR — stop the private cluster that slurm-up.sh started in DIR and leave no
# process behind: cancel every job, "scontrol shutdown", stop munged, then kill (TERM, then
# KILL) whatever still runs with DIR in its command line or environment. Exits non-zero if
# anything survives. Safe to run twice, or on a half-started cluster.
set -uo pipefail

d=${1:?usage: slurm-down.sh DIR}
[ -d "$d" ] || exit 0
d=$(cd "$d" && pwd -P)

conf="$d/slurm.conf"

# alive PID: the process exists and is not a zombie.
alive() {
  local st
  [ -n "${1:-}" ] && [ -r "/proc/$1/status" ] || return 1
  st=$(grep -m1 '^State:' "/proc/$1/status" 2>/dev/null) || return 1
  [[ $st != *Z* ]]
}
pidof_file() { [ -s "$1" ] && tr -dc '0-9' <"$1"; }

# ours: processes (not zombies) with DIR in their command line or environment, except this
# script, its subshells (they share its command line) and its ancestors (sudo, timeout, ...).
mapfile -d '' self </proc/$$/cmdline
self="${self[*]}"
ancestors=" "
p=$$
while [ "${p:-0}" -gt 1 ]; do
  ancestors+="$p "
  st=$(</proc/$p/stat) || break
  st=${st##*) }
  read -r _ p _ <<<"$st"
done
ours() {
  local p f words
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $ancestors == *" $p "* ]] && continue
    for f in cmdline environ; do
      mapfile -d '' words 2>/dev/null <"/proc/$p/$f" || continue
      [ "$f" = cmdline ] && [ "${words[*]}" = "$self" ] && break
      if [[ "${words[*]}" == *"$d"* ]]; then
        alive "$p" && echo "$p"
        break
      fi
    done
  done
}

ctld=$(pidof_file "$d/slurmctld.pid")
if alive "$ctld"; then
  SLURM_CONF=$conf scancel --user="$(id -un)" 2>/dev/null
  for ((i = 0; i < 50; i++)); do
    [ -z "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ] && break
    sleep 0.2
  done
  SLURM_CONF=$conf scontrol shutdown >/dev/null 2>&1
fi
for f in slurmctld.pid slurmd.pid munge/munged.pid; do
  p=$(pidof_file "$d/$f")
  for ((i = 0; i < 50; i++)); do
    alive "$p" || break
    [ "$f" = munge/munged.pid ] && [ "$i" = 0 ] && kill "$p" 2>/dev/null
    sleep 0.2
  done
done

for sig in TERM KILL; do
  left=$(ours)
  [ -z "$left" ] && exit 0
  kill -s "$sig" $left 2>/dev/null
  for ((i = 0; i < 25; i++)); do
    [ -z "$(ours)" ] && exit 0
    sleep 0.2
  done
done
echo "slurm-down: processes left behind:" >&2
for p in $(ours); do echo "  $p $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")" >&2; done
exit 1
