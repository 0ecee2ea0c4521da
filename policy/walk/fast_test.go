package walk

import (
	"testing"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
)

// TestShortcuts pins which shortcuts the fast executor takes for each built-in declaration and
// for declarations that state too little.
func TestShortcuts(t *testing.T) {
	must := func(d *policy.Greedy, err error) *policy.Greedy {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	authors, tentative := policy.VictimsAuthors, policy.VictimsTentative
	te := func(a schedulers.TiresiasEntryArgs) *policy.Greedy {
		a.LimitsS, a.Service = []float64{100}, "time"
		return must(schedulers.NewTiresiasEntry(a))
	}
	yarnFixed := shortcutSet{placement: placeYARN, exclusive: true, bySize: true, timeless: true}
	yarnRem := shortcutSet{placement: placeYARN, exclusive: true, bySize: true, drain: true}
	with := func(s shortcutSet, f func(*shortcutSet)) shortcutSet { f(&s); return s }
	for _, c := range []struct {
		name string
		d    *policy.Greedy
		want shortcutSet
		ok   bool
	}{
		{"fifo", must(schedulers.FIFO(schedulers.FIFOArgs{Preempt: true, Victims: authors})),
			with(yarnFixed, func(s *shortcutSet) { s.settled = true }), true},
		{"fifo tentative", must(schedulers.FIFO(schedulers.FIFOArgs{Preempt: true, Victims: tentative})), yarnFixed, true},
		{"fifo-no-preempt", must(schedulers.FIFO(schedulers.FIFOArgs{Victims: authors})), yarnFixed, true},
		{"sjf", must(schedulers.SJF(schedulers.SJFArgs{Preempt: true, Victims: authors})),
			with(yarnRem, func(s *shortcutSet) { s.remSettled, s.lazy = true, true }), true},
		{"sjf tentative", must(schedulers.SJF(schedulers.SJFArgs{Preempt: true, Victims: tentative})), yarnRem, true},
		{"sjf-no-preempt", must(schedulers.SJF(schedulers.SJFArgs{Victims: authors})),
			with(yarnRem, func(s *shortcutSet) { s.lazy = true }), true},
		{"tiresias-entry-order", te(schedulers.TiresiasEntryArgs{Preempt: true, Victims: authors}),
			with(yarnFixed, func(s *shortcutSet) { s.settled = true }), true},
		{"tiresias-entry-order tentative", te(schedulers.TiresiasEntryArgs{Preempt: true, Victims: tentative}), yarnFixed, true},
		{"sjf-ffs", must(schedulers.SJFFFS(schedulers.SJFFFSArgs{Victims: authors})),
			shortcutSet{placement: placeFirstFit, drain: true, keepFails: true}, true},
		{"sjf-ffs-preempt", must(schedulers.SJFFFS(schedulers.SJFFFSArgs{Preempt: true, Victims: authors})),
			shortcutSet{placement: placeFirstFit, drain: true}, true},
		{"sjf-ffss", must(schedulers.SJFFFS(schedulers.SJFFFSArgs{Consolidate: true, Victims: authors})),
			shortcutSet{placement: placeRule, drain: true}, true},
		{"sjf-bsbf", must(schedulers.SJFBSBF(schedulers.SJFBSBFArgs{SubBatch: true, Victims: authors})),
			shortcutSet{placement: placeBestBenefit, drain: true, keepFails: true, index: true}, true},
		{"sjf-bsbf-preempt", must(schedulers.SJFBSBF(schedulers.SJFBSBFArgs{Preempt: true, Victims: authors})),
			shortcutSet{placement: placeBestBenefit, drain: true}, true},
		{"sjf-bsbfs", must(schedulers.SJFBSBF(schedulers.SJFBSBFArgs{Consolidate: true, Victims: authors})),
			shortcutSet{placement: placeRule, drain: true}, true},
		// The share check's family shortcut needs the SJF order.
		{"best benefit in FIFO order", &policy.Greedy{Place: schedulers.BestBenefit{}, Order: policy.OrderFixed}, shortcutSet{}, false},
		// An unknown placement, or preemption with ranks the running set cannot bound.
		{"own placement", &policy.Greedy{Place: ownPlacer{}, Order: policy.OrderRemaining}, shortcutSet{}, false},
		{"any rank", &policy.Greedy{Place: schedulers.YARN{}, Preempt: true}, shortcutSet{}, false},
		{"any rank, no preemption", &policy.Greedy{Place: schedulers.YARN{}},
			shortcutSet{placement: placeYARN, exclusive: true, bySize: true}, true},
	} {
		got, ok := shortcuts(c.d)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: shortcuts %+v (%v), want %+v (%v)", c.name, got, ok, c.want, c.ok)
		}
	}
}

type ownPlacer struct{}

func (ownPlacer) Place(*policy.Call, *policy.Job) (policy.Placement, bool, error) {
	return policy.Placement{}, false, nil
}
