package bench

import (
	"fmt"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/external"
	"github.com/sharebench/sharebench/sim"
)

// endPolicy ends the process of an external policy once the run is over, and notes in the
// summary that the decisions came from it. Other policies pass err through.
func endPolicy(p policy.Policy, res *sim.Result, err error) error {
	x, ok := p.(*external.Policy)
	if !ok {
		return err
	}
	var totals *external.Totals
	if res != nil {
		totals = &external.Totals{Jobs: len(res.Jobs), AvgJCT: res.Summary.AvgJCT, Makespan: res.Summary.Makespan, Preemptions: res.Summary.Preemptions}
		for _, j := range res.Jobs {
			totals.SumJCT += j.JCT.Seconds()
		}
	}
	if err = x.End(totals, err); err != nil {
		return err
	}
	name := ""
	if x.Child != "" {
		name = fmt.Sprintf(", which calls itself %q", x.Child)
	}
	res.Summary.Notes = append(res.Summary.Notes, fmt.Sprintf("decisions came from a separate process (%s%s) over protocol %d: %d scheduling instants", x.Name(), name, external.Version, x.Decisions))
	return nil
}

// policyCommand is the command of an external policy spec, for run.json ("" otherwise).
func policyCommand(spec string) string {
	a, _ := external.Parse(spec)
	return a.Cmd
}

// policyLabel names a policy in summaries: the spec, or an external policy's name argument.
func policyLabel(spec string) string {
	if a, ok := external.Parse(spec); ok && a.Name != "" {
		return a.Name
	}
	return spec
}
