package policy

import (
	"fmt"
	"time"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// Greedy declares a policy of the authors' scheduling loop (docs/paper.md §4.3, §5.8). At every
// call the loop walks the pending jobs in priority order and starts each one that Place finds
// GPUs for; a job that cannot be placed is passed over and the jobs behind it are tried (greedy
// backfill).
//
// With Preempt, a pending job that does not fit stops running jobs that rank below it, lowest
// first, trying again after each, until it fits. It passes over (and leaves running for the rest
// of the call) jobs with at most MinVictimIters iterations left and jobs that share a GPU with a
// job started earlier in the call, whose share check assumed they keep running. With the
// authors' victims the stops stand even if the job never fits; with tentative ones they are
// undone then. A stopped job is walked again at its rank and may be placed again; placed back on
// exactly its GPUs at its option, it was never stopped.
//
// A declaration says what to decide; an executor decides it (package walk: Reference, the plain
// walk that defines the semantics above, and Fast, which gives the same plans faster).
type Greedy struct {
	Name string
	// Key orders the pending jobs, lower first, ties by submission time and ID (Compare). The
	// engine computes a job's key when it starts waiting. nil means submission order.
	Key func(j *Job) Key
	// Rank ranks a running job at time now against the pending jobs (their Key) when one of them
	// looks for jobs to stop. Needed with Preempt.
	Rank func(now time.Duration, j *Job) Key
	// Order states what Key and Rank compute, which executors rely on.
	Order Ordering
	// Place finds GPUs for a job.
	Place Placer
	// Exclusive states that Place never puts a job on a GPU that holds one.
	Exclusive bool
	Preempt   bool
	// Victims is VictimsAuthors or VictimsTentative.
	Victims string
	// Mode is the sharing mode whose slowdowns apply; "" for a policy that never shares.
	Mode profile.Mode
	// Hooks, if set, runs the policy's own steps around each walk.
	Hooks Hooks
}

// Ordering is what a Greedy declaration's Key and Rank compute.
type Ordering int

const (
	// OrderAny promises nothing.
	OrderAny Ordering = iota
	// OrderFixed: keys and ranks change only when Hooks.Before says so, never with time or
	// progress (submission order, Tiresias queues).
	OrderFixed
	// OrderRemaining: a waiting job's key is its remaining time in seconds alone at its fastest
	// sub-batch, Key{A: j.P.Rem × j.Options[j.Fast].Excl.Seconds()}, and a running job ranks by
	// its remaining time in seconds at its current step time, Key{A: j.RemTime(now).Seconds()}
	// (shortest remaining time first).
	OrderRemaining
)

// The victims of the preemptive path (Greedy.Victims).
const (
	// VictimsAuthors stops lower-ranked jobs one by one until the job fits, and keeps them
	// stopped if it never does (the authors' code, docs/paper.md §5.8).
	VictimsAuthors = "authors"
	// VictimsTentative stops them only if the job then fits.
	VictimsTentative = "tentative"
)

// MinVictimIters is the authors' filter on victims: only running jobs with more iterations left
// than this are stopped (Lai-JX/Scheduler schedulers.py jobs_placement).
const MinVictimIters = 100

// CheckVictims returns an error unless v names victims (VictimsAuthors or VictimsTentative).
func CheckVictims(v string) error {
	if v != VictimsAuthors && v != VictimsTentative {
		return fmt.Errorf("victims: want %q or %q, got %q", VictimsAuthors, VictimsTentative, v)
	}
	return nil
}

// A Placer finds GPUs for a pending job.
type Placer interface {
	// Place returns where j starts on the cluster as the call has left it, or ok false when it
	// fits nowhere now. It reads c.Cluster and must not change it. Placement.Job is filled in by
	// the executor; Placement.Reason only when c.Env.Explain is set.
	Place(c *Call, j *Job) (pl Placement, ok bool, err error)
}

// Hooks are a Greedy policy's own steps around each walk (Tiresias' demotions and promotions).
type Hooks interface {
	// Before runs at the start of a call. It may add notes and re-keyed pending jobs to plan
	// (Plan.Rekey) and returns the running jobs whose Rank it changed. With walk false the call
	// ends there, with plan as it is (the engine re-sorts the re-keyed jobs first and calls again
	// at plan.Wake).
	Before(s *State, plan *Plan) (reranked []*Job, walk bool)
	// After runs at the end of a call that walked, with the call's plan.
	After(s *State, plan *Plan)
}

// Call is what a placement sees of a scheduling call in progress: the State, whose Cluster holds
// the call's starts and stops so far, and the jobs on the GPUs as would-be partners.
type Call struct {
	*State
	resident func(id trace.JobID) (Partner, error)
}

// NewCall returns the Call of an executor on s; resident finds a job on a GPU (Call.Resident).
func NewCall(s *State, resident func(id trace.JobID) (Partner, error)) *Call {
	return &Call{State: s, resident: resident}
}

// Resident returns the job with ID id, which holds a GPU of the cluster, as a job that would
// share the GPU sees it: a running job, or one started earlier in the call.
func (c *Call) Resident(id trace.JobID) (Partner, error) { return c.resident(id) }

// Partner is a job on a GPU as a placement that would share the GPU sees it.
type Partner struct {
	Job *Job
	Opt int // the option it runs at
	// Rem is its remaining time in seconds: at its current step time for a running job (RemTime),
	// at its option's exclusive step time for a job started in this call.
	Rem float64
}
