package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/trace"
)

// Result is the outcome of a run.
type Result struct {
	Jobs    []JobResult // by job ID
	Util    []UtilRow
	Summary Summary
	// PairLookups counts the slowdowns the policy and the engine looked up (written nowhere): 0
	// means the run did not depend on them.
	PairLookups int64
	// KeptPlans counts the policy calls whose own placements and releases the cluster kept as
	// the plan (written nowhere).
	KeptPlans int
	// Moves counts the stops of jobs that the same plan started again, which skipped the
	// queues (written nowhere).
	Moves int
}

// JobResult is one row of jobs.csv.
type JobResult struct {
	ID                    trace.JobID
	Model                 string
	GPUs, Batch, SubBatch int
	Submit, Start, End    time.Duration
	JCT, Queue            time.Duration
	Solo, Shared          time.Duration
	Preempts              int
}

// UtilRow is one row of util.csv: averages over [T, T+width).
type UtilRow struct {
	T                              time.Duration
	Busy, Shared, Running, Pending float64
}

// Summary is summary.json. The engine fills the metrics; callers fill the description fields.
type Summary struct {
	Policy        string  `json:"policy"`
	PolicySpec    string  `json:"policy_spec,omitempty"`
	Trace         string  `json:"trace"`
	Cluster       string  `json:"cluster"`
	GPUs          int     `json:"gpus"`
	GPUMemGiB     float64 `json:"gpu_mem_gib"`
	IntervalS     float64 `json:"interval_s"`
	Seed          uint64  `json:"seed"`
	Profile       string  `json:"profile,omitempty"`
	ProfileSource string  `json:"profile_source,omitempty"`
	Jobs          int     `json:"jobs"`
	DroppedJobs   int     `json:"dropped_jobs"`
	AvgJCT        float64 `json:"avg_jct_s"`
	P50JCT        float64 `json:"p50_jct_s"`
	P95JCT        float64 `json:"p95_jct_s"`
	P99JCT        float64 `json:"p99_jct_s"`
	Makespan      float64 `json:"makespan_s"`
	AvgQueue      float64 `json:"avg_queue_s"`
	GPUUtil       float64 `json:"gpu_util"`
	SharedJobs    int     `json:"shared_jobs"`
	// SubBatchSharedJobs counts the jobs that shared GPUs at a sub-batch smaller than their
	// largest because the largest would not have fit next to their partners.
	SubBatchSharedJobs int               `json:"subbatch_shared_jobs"`
	Preemptions        int               `json:"preemptions"`
	RestartS           float64           `json:"restart_s"`
	RestartCost        string            `json:"restart_cost"`
	MissingPairs       int               `json:"missing_pairs"`
	Labels             map[string]string `json:"labels,omitempty"`
	Notes              []string          `json:"notes"`
	// ByModel and ByGPUs break average JCT and queueing delay down by the trace's model and by
	// GPU demand (buckets 1, 2, 3–4, 5–8, ≥9), over every job.
	ByModel []Breakdown `json:"by_model"`
	ByGPUs  []Breakdown `json:"by_gpus"`
}

// Breakdown is the average JCT and queueing delay of one group of jobs.
type Breakdown struct {
	Key      string  `json:"key"`
	Jobs     int     `json:"jobs"`
	AvgJCT   float64 `json:"avg_jct_s"`
	AvgQueue float64 `json:"avg_queue_s"`
}

// gpuBucket names the GPU-demand bucket of a job of n GPUs.
func gpuBucket(n int) string {
	switch {
	case n <= 2:
		return strconv.Itoa(n)
	case n <= 4:
		return "3–4"
	case n <= 8:
		return "5–8"
	}
	return "≥9"
}

// breakdown groups the jobs' JCT and queueing delay by key, in first-seen order of the keys
// sorted by sortKey.
func breakdown(jobs []JobResult, key func(*JobResult) string, less func(a, b string) int) []Breakdown {
	idx := map[string]int{}
	var out []Breakdown
	var sumJ, sumQ []float64
	for i := range jobs {
		j := &jobs[i]
		k := key(j)
		n, ok := idx[k]
		if !ok {
			n = len(out)
			idx[k] = n
			out = append(out, Breakdown{Key: k})
			sumJ, sumQ = append(sumJ, 0), append(sumQ, 0)
		}
		out[n].Jobs++
		sumJ[n] += j.JCT.Seconds()
		sumQ[n] += j.Queue.Seconds()
	}
	for n := range out {
		out[n].AvgJCT = round3(sumJ[n] / float64(out[n].Jobs))
		out[n].AvgQueue = round3(sumQ[n] / float64(out[n].Jobs))
	}
	slices.SortFunc(out, func(a, b Breakdown) int { return less(a.Key, b.Key) })
	return out
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// quantile is the authors' sorted(x)[int(q*n)] (docs/paper.md §2.2), clamped to the last element.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return sorted[i]
}

func (e *engine) result() *Result {
	r := &Result{Jobs: make([]JobResult, len(e.jobs)), PairLookups: e.env.Lookups(), KeptPlans: e.kept, Moves: e.moves}
	jcts := make([]time.Duration, len(e.jobs))
	var sumJCT, sumQueue float64 // seconds: nanosecond sums overflow on Philly-scale traces
	makespan, pre := time.Duration(0), 0
	for i, j := range e.jobs {
		st := e.stats[i]
		if st.end < 0 {
			panic(fmt.Sprintf("sim: job %d never finished", j.ID))
		}
		jct := st.end - j.Submit
		queue := jct - j.P.Exec
		o := j.Options[j.Opt]
		r.Jobs[i] = JobResult{ID: j.ID, Model: j.Model, GPUs: j.GPUs, Batch: o.Batch, SubBatch: o.SubBatch,
			Submit: j.Submit, Start: st.start, End: st.end, JCT: jct, Queue: queue, Solo: st.solo, Shared: st.sharedFor, Preempts: j.Preempts}
		jcts[i] = jct
		sumJCT += jct.Seconds()
		sumQueue += queue.Seconds()
		makespan = max(makespan, st.end)
		pre += j.Preempts
	}
	slices.SortFunc(r.Jobs, func(a, b JobResult) int { return int(a.ID - b.ID) })
	slices.Sort(jcts)
	n := float64(len(jcts))
	s := &r.Summary
	s.Policy = e.pol.Name()
	s.Cluster = e.cfg.Shape.String()
	s.GPUs = e.cfg.Shape.GPUs()
	s.GPUMemGiB = round3(float64(e.cfg.Shape.GPUMemBytes) / float64(1<<30))
	s.IntervalS = round3(e.cfg.Interval.Seconds())
	s.Trace = e.cfg.TraceName
	s.Jobs = len(jcts)
	s.AvgJCT = round3(sumJCT / n)
	s.P50JCT = round3(quantile(jcts, 0.5).Seconds())
	s.P95JCT = round3(quantile(jcts, 0.95).Seconds())
	s.P99JCT = round3(quantile(jcts, 0.99).Seconds())
	s.Makespan = round3(makespan.Seconds())
	s.AvgQueue = round3(sumQueue / n)
	e.advance(makespan)
	if makespan > 0 {
		s.GPUUtil = math.Round(e.util.busyTotal/(float64(e.cfg.Shape.GPUs())*makespan.Seconds())*1e6) / 1e6
	}
	s.SharedJobs = e.shared
	s.SubBatchSharedJobs = e.subShared
	s.ByModel = breakdown(r.Jobs, func(j *JobResult) string { return j.Model }, strings.Compare)
	bucketOrder := []string{"1", "2", "3–4", "5–8", "≥9"}
	s.ByGPUs = breakdown(r.Jobs, func(j *JobResult) string { return gpuBucket(j.GPUs) }, func(a, b string) int {
		return slices.Index(bucketOrder, a) - slices.Index(bucketOrder, b)
	})
	s.Preemptions = pre
	s.RestartS = round3(e.restartTotal.Seconds())
	s.RestartCost = e.cfg.Restart.String()
	s.MissingPairs = e.env.Missing()
	s.Notes = append(s.Notes, e.notes...)
	if m := e.env.Missing(); m > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d ordered configuration pairs were looked up and are missing from the profile; they were never shared (%s)", m, e.missingList()))
	}
	if c := e.env.Clamped(); c > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d pairs have a measured slowdown below 1; they were simulated at 1", c))
	}
	if s.Notes == nil {
		s.Notes = []string{}
	}
	r.Util = e.util.rows(makespan)
	return r
}

func (e *engine) missingList() string {
	ps := e.env.MissingPairs()
	slices.SortFunc(ps, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	out := ""
	for k, p := range ps {
		if k == 5 {
			out += fmt.Sprintf(", and %d more", len(ps)-5)
			break
		}
		if k > 0 {
			out += ", "
		}
		out += e.env.CfgName[p[0]] + " next to " + e.env.CfgName[p[1]]
	}
	return out
}

// utilAcc integrates occupancy over time into at most maxBuckets equal buckets, doubling the
// bucket width whenever time outgrows them, so memory stays constant however long the run.
type utilAcc struct {
	width     time.Duration
	span      time.Duration // maxBuckets × width, saturating
	b         [][4]float64  // integrals in GPU·seconds (busy, shared) and job·seconds
	busyTotal float64
	gpus      int
}

const maxBuckets = 1000

func (u *utilAcc) init(gpus int) {
	u.width, u.gpus = time.Second, gpus
	u.span = maxBuckets * time.Second
	u.b = make([][4]float64, 0, maxBuckets)
}

func (u *utilAcc) add(t0, t1 time.Duration, busy, shared, running, pending int) {
	if t1 <= t0 {
		return
	}
	u.busyTotal += float64(busy) * (t1 - t0).Seconds()
	// The span saturates instead of overflowing, which for t1 near the int64 range doubled the
	// width forever.
	for t1 > u.span {
		u.double()
	}
	for t0 < t1 {
		k := int(t0 / u.width)
		end := t1
		if start := time.Duration(k) * u.width; t1-start > u.width {
			end = start + u.width
		}
		for len(u.b) <= k {
			u.b = append(u.b, [4]float64{})
		}
		d := (end - t0).Seconds()
		u.b[k][0] += float64(busy) * d
		u.b[k][1] += float64(shared) * d
		u.b[k][2] += float64(running) * d
		u.b[k][3] += float64(pending) * d
		t0 = end
	}
}

func (u *utilAcc) double() {
	n := (len(u.b) + 1) / 2
	for k := range n {
		var m [4]float64
		for x := range 4 {
			m[x] = u.b[2*k][x]
			if 2*k+1 < len(u.b) {
				m[x] += u.b[2*k+1][x]
			}
		}
		u.b[k] = m
	}
	u.b = u.b[:n]
	u.width *= 2
	u.span = simtime.Mul(u.width, maxBuckets)
}

func (u *utilAcc) rows(end time.Duration) []UtilRow {
	rows := make([]UtilRow, 0, len(u.b))
	for k, v := range u.b {
		t := time.Duration(k) * u.width
		w := (min(end, t+u.width) - t).Seconds()
		if w <= 0 {
			break
		}
		rows = append(rows, UtilRow{T: t, Busy: v[0] / w, Shared: v[1] / w, Running: v[2] / w, Pending: v[3] / w})
	}
	return rows
}
