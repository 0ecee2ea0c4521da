package external

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// check applies plan to the State's cluster tentatively (the engine rolls the cluster back
// after Schedule) under the engine's rules, stops first, then starts in order, and names the
// first rule broken. The engine checks the plan again when it applies it.
func (p *Policy) check(s *policy.State, plan policy.Plan) error {
	cl := s.Cluster
	clear(p.stops)
	clear(p.planned)
	for _, id := range plan.Stop {
		j := s.Lookup(id)
		switch {
		case j == nil:
			return fmt.Errorf("stop of job %d: unknown job (not in the trace)", id)
		case p.stops[id]:
			return fmt.Errorf("stop of job %d: listed twice", id)
		case !j.Running:
			return fmt.Errorf("stop of job %d: the job is not running (%s)", id, status(s, j))
		}
		p.stops[id] = true
		if err := cl.Release(id); err != nil {
			return fmt.Errorf("stop of job %d: %w", id, err)
		}
	}
	for _, pl := range plan.Start {
		if err := p.checkStart(s, pl); err != nil {
			return fmt.Errorf("start of job %d: %w", pl.Job, err)
		}
	}
	for _, n := range plan.Notes {
		if s.Lookup(n.Job) == nil {
			return fmt.Errorf("note %q of job %d: unknown job (not in the trace)", n.Event, n.Job)
		}
	}
	return nil
}

func (p *Policy) checkStart(s *policy.State, pl policy.Placement) error {
	cl := s.Cluster
	sh := cl.Shape()
	j := s.Lookup(pl.Job)
	switch {
	case j == nil:
		return fmt.Errorf("unknown job (not in the trace)")
	case j.Submit > s.Now:
		return fmt.Errorf("start before submission: the job is submitted at t=%s", seconds(j.Submit))
	case j.Done:
		return fmt.Errorf("the job has finished")
	case j.Running && !p.stops[j.ID]:
		return fmt.Errorf("the job is already running (on GPUs %s) and the plan does not stop it", gpuList(cl, j.On))
	}
	if _, dup := p.planned[j.ID]; dup {
		return fmt.Errorf("started twice in one plan")
	}
	if pl.Opt < 0 || pl.Opt >= len(j.Options) {
		return fmt.Errorf("option %d out of range (the job has %d options, 0 to %d)", pl.Opt, len(j.Options), len(j.Options)-1)
	}
	if len(pl.GPUs) != j.GPUs {
		return fmt.Errorf("placed on %d GPUs, the job needs %d", len(pl.GPUs), j.GPUs)
	}
	mem := j.Options[pl.Opt].Mem
	for i, g := range pl.GPUs {
		if g < 0 || g >= cl.NumGPUs() {
			return fmt.Errorf("GPU index %d out of range (the cluster has GPUs 0 to %d)", g, cl.NumGPUs()-1)
		}
		id := cl.ID(g)
		if slices.Contains(pl.GPUs[:i], g) {
			return fmt.Errorf("GPU %s (index %d) double-booked: listed twice", id, g)
		}
		on := cl.Jobs(g)
		if len(on) >= sh.MaxShare {
			return fmt.Errorf("GPU %s (index %d) would hold %d jobs, more than max_share %d (it holds job %s)", id, g, len(on)+1, sh.MaxShare, jobList(on))
		}
		if free := cl.FreeMem(g); free < mem {
			return fmt.Errorf("GPU memory exceeded on GPU %s (index %d): option %d needs %s, %s free (it holds job %s)", id, g, pl.Opt, gib(mem), gib(free), jobList(on))
		}
		for _, q := range on {
			jq := s.Lookup(q)
			qo, ok := p.planned[q]
			if !ok {
				qo = jq.Opt
			}
			_, ok1 := s.Env.Xi(j, pl.Opt, jq, qo)
			_, ok2 := s.Env.Xi(jq, qo, j, pl.Opt)
			if !ok1 || !ok2 {
				return fmt.Errorf("shares GPU %s with job %d, a pair the profile lacks (%s next to %s)", id, q, s.Env.CfgName[j.Options[pl.Opt].Cfg], s.Env.CfgName[jq.Options[qo].Cfg])
			}
		}
	}
	for i, q := range pl.Partners {
		if slices.Contains(pl.Partners[:i], q) {
			return fmt.Errorf("partner %d listed twice", q)
		}
		if !slices.ContainsFunc(pl.GPUs, func(g int) bool { return slices.Contains(cl.Jobs(g), q) }) {
			return fmt.Errorf("partner %d is on none of the job's GPUs", q)
		}
	}
	if err := cl.Place(j.ID, pl.GPUs, mem); err != nil {
		return err
	}
	p.planned[j.ID] = pl.Opt
	return nil
}

// status describes a job that is not running.
func status(s *policy.State, j *policy.Job) string {
	switch {
	case j.Done:
		return "it has finished"
	case j.Submit > s.Now:
		return fmt.Sprintf("it is submitted at t=%s", seconds(j.Submit))
	default:
		return "it is pending"
	}
}

func gpuList(cl *cluster.Cluster, gpus []int) string {
	var ids []string
	for _, g := range gpus {
		ids = append(ids, cl.ID(g).String())
	}
	return strings.Join(ids, ",")
}

func jobList(ids []trace.JobID) string {
	var out []string
	for _, id := range ids {
		out = append(out, fmt.Sprint(id))
	}
	if len(out) == 0 {
		return "no other"
	}
	return strings.Join(out, " and ")
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/float64(cluster.GiB)) }
