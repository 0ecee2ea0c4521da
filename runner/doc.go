// Package runner measures deep-learning workloads on real GPUs, alone and co-located, and
// turns the measurements into a profile.Table (docs/runner.md).
//
// Vocabulary: a Campaign (YAML) expands into Cells, the unit of work: one configuration
// (model, batch, sub-batch, GPU count) measured alone, or two together under a sharing mode,
// from repeats to max_repeats repeats each (until the CI is tight). A repeat is a solo-A,
// solo-B and pair run in ABBA order, every run in fresh processes started by a Backend (Local,
// ContainerBackend for docker or podman, Fake), or, with workers: warm, in a measurement window
// of long-lived warm workers (train.py --serve; warmPool) that Run starts once per
// configuration and group of cells. Children speak protocol v1 (JSON lines, Parser) and are
// released together by a ready/go barrier; only steps inside the overlap window count.
// Project projects a campaign's time from step times (sharebench profile plan). Per-cell failures (OOM, crash, hang, malformed stream, unwritable raw files)
// are Results, never errors; errors are for cancellation and infrastructure. The Slurm and
// Kubernetes dispatchers (Slurm, Kube) run cells as cluster tasks through package dispatch. The
// package never imports policy or sim, and it changes no GPU setting (an MPS daemon it starts
// is its own, with private directories).
//
// # Journal
//
// DIR/journal.jsonl is the campaign's source of truth, append-only, one JSON object per line,
// each line written with a single write(2) under an exclusive flock and fsynced:
//
//	{"record":"cell","v":1,"campaign":"NAME","cell":{"index":3,"id":"9f2c…","kind":"pair",
//	 "a":{...},"b":{...},"label":"resnet50/64/64+vgg16/32/32"},"status":"ok","a":{...},"b":{...},
//	 "mode":"timeslice","env":{...},"backend":"local","attempt":1,"started":"…","finished":"…",
//	 "runs":[...]}
//
// The record is Result: MarshalResult writes it, DecodeResults reads it. Rules:
//
//   - cell.id is a hash of the cell's content and of the campaign settings that change what
//     is measured (not paths, timeouts, GPUs or telemetry), so it is stable across reruns
//     and machines. A cell whose latest record has status ok, infeasible or
//     infeasible_predicted is done and skipped on rerun; failed cells rerun with
//     --retry-failed, unavailable ones always. Later records of a cell supersede earlier ones
//     (Latest).
//   - Readers skip records whose "record" is not "cell", so new record kinds can be added,
//     and report lines that do not decode (a crash mid-write leaves at most one) and cell
//     records that fail validation (unknown status; ok without positive, finite step times
//     and ξ): those cells run again. The journal is never opened through a symbolic link.
//   - Dispatchers (Slurm, Kubernetes) run RunCell(ctx, campaign, index, backend, opts) per
//     task, or "sharebench profile cell --index i", which prints the same Result as one JSON
//     line; appending those lines to the journal is all a dispatcher has to do.
//   - cells.csv, profile.json and manifest.json are derived from the campaign and the
//     journal (BuildProfile is a pure function of them) and rewritten atomically.
//     campaign.json (PlanFile) is the resolved campaign, written before the first cell, so
//     that CampaignStatus knows every cell even when no manifest was written.
//
// Warm-worker campaigns add a record of kind "workers" (WorkersRecord) each time a group of
// workers is made ready: how long they took to start and build (at once) and to warm up (one at
// a time), and which were retired first.
//
// Raw data lives next to it: DIR/cells/<index>-<label>-<id8>/<run>-<role>.events.jsonl (the
// protocol lines), <run>-<role>.log (stderr and non-protocol stdout) and
// <run>.telemetry.jsonl; with warm workers these hold what the workers wrote during the run's
// window, and DIR/workers/<worker>.events.jsonl and .log what they wrote outside windows.
package runner
