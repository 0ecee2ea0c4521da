package schedulers

import (
	"bufio"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sharebench/sharebench/policy"
)

// TiresiasGittinsArgs are tiresias-gittins's arguments.
type TiresiasGittinsArgs struct {
	// LimitsS are the queue limits in seconds of attained service; len+1 queues.
	LimitsS []float64 `json:"limits_s"`
	// Service is "gpu-time" (wall seconds × GPUs) or "time" (wall seconds); it measures both the
	// queue limits and the service the Gittins index is read at.
	Service string `json:"service"`
	// DeltaS is the Gittins quantum in seconds of service: the index is the chance of finishing
	// within the next DeltaS over the service that costs.
	DeltaS int `json:"delta_s"`
}

// NewTiresiasGittins returns the Tiresias simulator's "dlas-gpu-gittins" as the Muri simulator
// keeps it (Rivendile/Muri simulator/run_sim.py dlas_sim_jobs, get_gittins_index,
// cal_r_gittins_index, parse_job_dist): tiresias's queues and walk (tiresias.go), with each
// queue sorted before it is walked:
//   - order within a queue: by the Gittins index of the job's attained service, highest first,
//     then by submission time in whole seconds, earliest first; the sort is stable, so jobs that
//     tie keep the queue's order (the running ones of the last walk first);
//   - the index (GittinsIndex) comes from the job-size distribution that the Tiresias simulator
//     ships, yarn-gput1000.csv (GPU-seconds of 1,001 YARN jobs), with a quantum of DeltaS;
//   - it is read at every event for every job, from the service attained by then: a running
//     job's index changes as it runs, but only events reorder the queues.
//
// Muri's main() does not dispatch this schedule (the branch lives inside dlas_sim_jobs); the
// Tiresias simulator's main() does, by loading the distribution and calling dlas_sim_jobs(True),
// which is how sim/testdata/muri's references ran Muri's code.
func NewTiresiasGittins(a TiresiasGittinsArgs) (*Tiresias, error) {
	if a.DeltaS <= 0 || a.DeltaS > 1e9 {
		return nil, fmt.Errorf("delta_s: want a positive number of seconds of at most 1e9, got %d", a.DeltaS)
	}
	t, err := NewTiresias(TiresiasArgs{LimitsS: a.LimitsS, Service: a.Service})
	if err != nil {
		return nil, err
	}
	g, err := NewGittinsIndex(tiresiasDurations(), a.DeltaS)
	if err != nil {
		return nil, err
	}
	t.name, t.gittins = KeyTiresiasGittins, g
	return t, nil
}

// Rank returns the Gittins index of job j at time now, from the service it has attained.
func (t *Tiresias) Rank(now time.Duration, j *policy.Job) float64 {
	return t.gittins.Rank(t.Service(now, j))
}

// Service returns the service job j has attained at time now, as the Gittins index reads it: wall
// time run in seconds, times its GPUs with GPU-time service.
func (t *Tiresias) Service(now time.Duration, j *policy.Job) float64 {
	a := j.Executed(now).Seconds()
	if t.gpuTime {
		a *= float64(j.GPUs)
	}
	return a
}

// RankSpan returns the Gittins index at service a and the span of service [lo, hi) that has the
// same index.
func (t *Tiresias) RankSpan(a float64) (rank, lo, hi float64) { return t.gittins.Span(a) }

// GittinsBefore reports whether a job of index ra submitted in whole second sa goes before one of
// rb and sb: the higher index first, then the earlier second.
func GittinsBefore(ra float64, sa int64, rb float64, sb int64) bool {
	return ra > rb || (ra == rb && sa < sb)
}

// SubmitSecond is the lineage's tie-break: the submission time in whole seconds.
func SubmitSecond(j *policy.Job) int64 { return int64(j.Submit / time.Second) }

// sortQueue sorts a queue stably by the Gittins order, each job's index read once.
func (t *Tiresias) sortQueue(s *policy.State, queue []int32) {
	t.rank = t.rank[:0]
	t.ix = t.ix[:0]
	for k, i := range queue {
		t.rank = append(t.rank, t.Rank(s.Now, s.Jobs[i]))
		t.ix = append(t.ix, int32(k))
	}
	slices.SortStableFunc(t.ix, func(a, b int32) int {
		ra, sa := t.rank[a], SubmitSecond(s.Jobs[queue[a]])
		rb, sb := t.rank[b], SubmitSecond(s.Jobs[queue[b]])
		switch {
		case GittinsBefore(ra, sa, rb, sb):
			return -1
		case GittinsBefore(rb, sb, ra, sa):
			return 1
		}
		return 0
	})
	t.sorted = t.sorted[:0]
	for _, k := range t.ix {
		t.sorted = append(t.sorted, queue[k])
	}
	copy(queue, t.sorted)
}

//go:embed data/tiresias-yarn-gput1000.csv
var tiresiasDurationsCSV string

// tiresiasDurations returns the Tiresias simulator's job-size samples (data/README.md).
func tiresiasDurations() []int64 {
	var d []int64
	sc := bufio.NewScanner(strings.NewReader(tiresiasDurationsCSV))
	sc.Scan() // header
	for sc.Scan() {
		v, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			panic(fmt.Sprintf("schedulers: data/tiresias-yarn-gput1000.csv: %v", err))
		}
		d = append(d, v)
	}
	return d
}

// GittinsIndex is the lineage's discretised Gittins index of a job by its attained service: a
// step function of the service, computed from a sample of job sizes.
type GittinsIndex struct {
	below []float64 // distinct sizes, ascending
	rank  []float64 // rank[k]: the index of a job whose service is below below[k] (and not below below[k-1])
}

// NewGittinsIndex computes the index from samples of job sizes (in seconds of service) with a
// quantum of delta seconds, as the lineage's cal_r_gittins_index does for every sample: for a
// job that has attained a (one second below a sample size), the index is 10^6·P/E with P the
// share of the samples larger than a that end by a+delta, and E the mean over those samples of
// their size where they end by then and of delta where they do not (the whole size, as the
// lineage counts it, not what is left after a); P and E are rounded to 5 decimals and the index
// to 4, as Python rounds. (Where a+delta passes the largest sample, the lineage stops P's count
// one sample short; so does this.)
func NewGittinsIndex(sizes []int64, delta int) (*GittinsIndex, error) {
	if len(sizes) < 2 {
		return nil, fmt.Errorf("gittins index: need at least two job sizes, got %d", len(sizes))
	}
	data := slices.Clone(sizes)
	slices.Sort(data)
	if data[0] < 1 || data[len(data)-1] > 1<<52 {
		return nil, fmt.Errorf("gittins index: job sizes must lie in [1, 2^52] seconds")
	}
	num := len(data)
	first := func(a int64) int { // the first sample larger than a
		return sort.Search(num, func(i int) bool { return data[i] > a })
	}
	g := &GittinsIndex{}
	for k, v := range data {
		if k > 0 && data[k-1] == v {
			continue
		}
		a := v - 1
		idx := first(a)
		next := a + int64(delta)
		idxDelta := num - 1
		if next <= data[num-1]-1 {
			idxDelta = first(next)
		}
		p := pyRound(float64(idxDelta-idx)/float64(num-idx), 5)
		var sum int64
		for _, d := range data[idx:idxDelta] {
			sum += d
		}
		sum += int64(delta) * int64(num-idxDelta)
		e := pyRound(float64(sum)/float64(num-idx), 5)
		g.below = append(g.below, float64(v))
		g.rank = append(g.rank, pyRound(p*1000000/e, 4))
	}
	return g, nil
}

// Rank returns the index of a job that has attained a seconds of service: that of the first
// sample size above a, and 0 above every sample.
func (g *GittinsIndex) Rank(a float64) float64 {
	k := sort.Search(len(g.below), func(k int) bool { return g.below[k] > a })
	if k == len(g.below) {
		return 0
	}
	return g.rank[k]
}

// Span returns Rank(a) and the span of service [lo, hi) that has the same index.
func (g *GittinsIndex) Span(a float64) (rank, lo, hi float64) {
	k := sort.Search(len(g.below), func(k int) bool { return g.below[k] > a })
	lo, hi = math.Inf(-1), math.Inf(1)
	if k > 0 {
		lo = g.below[k-1]
	}
	if k == len(g.below) {
		return 0, lo, hi
	}
	return g.rank[k], lo, g.below[k]
}

// pyRound rounds x to n decimals as Python's round does: to the nearest decimal, ties (of the
// exact binary value) to even.
func pyRound(x float64, n int) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', n, 64), 64)
	if err != nil {
		panic(err)
	}
	return v
}
