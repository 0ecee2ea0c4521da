package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
)

// xiVariants returns the Gavel profile and variants of it that differ only in the slowdowns.
func xiVariants(t *testing.T, in *Inputs) []*profile.Table {
	t.Helper()
	base, err := in.Profile(ProfileSpec{File: ProfileGavelV100})
	if err != nil {
		t.Fatal(err)
	}
	out := []*profile.Table{base}
	for _, s := range []float64{0, 1.5} {
		st, err := ScaleXi(base, s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	sym, err := SymmetricXi(base)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, sym)
}

// TestExclusiveIgnoresXi: a policy that says it never shares a GPU (policy.Exclusive) gives
// the same simulation whatever the profile's slowdowns, which is what lets a sweep simulate
// such runs once (memo.go); a sharing policy on the same trace does depend on them. Every
// registered policy is either exclusive or one of the sharing ones.
func TestExclusiveIgnoresXi(t *testing.T) {
	env := testEnv(t)
	in := NewInputs(env)
	mm, err := in.ModelMap(ModelMapGavel)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := in.Jobs(TraceSpec{Name: "testbed61", File: TraceTestbed61, Format: "muri"}, 1, nil, mm, 32, 48<<30)
	if err != nil {
		t.Fatal(err)
	}
	profs := xiVariants(t, in)
	shape := ClusterSpec{Nodes: 4, GPUsPerNode: 8, MemGiB: 48}.Shape()
	simulate := func(pol string, prof *profile.Table) *sim.Result {
		t.Helper()
		res, err := Simulate(context.Background(), SimSpec{Jobs: jobs, TraceName: "testbed61", Shape: shape, Policy: pol,
			Profile: prof, ProfileName: "gavel", ModelMap: mm, Restart: sim.RestartCost{Source: sim.RestartOff}}, "", false)
		if err != nil {
			t.Fatal(err)
		}
		res.Summary.ProfileSource = "" // the profile's description, not the simulation
		return res
	}
	sharing := map[string]bool{}
	for _, info := range builtin.Registry().Infos() {
		if info.Name == policy.KeyExternal {
			continue
		}
		p, err := builtin.Registry().New(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.(policy.Exclusive); !ok {
			sharing[info.Name] = true
		}
	}
	if want := map[string]bool{schedulers.KeySJFFFS: true, schedulers.KeySJFBSBF: true, schedulers.KeyAntMan: true, schedulers.KeyMuriS: true, schedulers.KeyMuriL: true}; !reflect.DeepEqual(sharing, want) {
		t.Errorf("sharing policies %v, want %v", sharing, want)
	}
	for _, pol := range []string{"fifo", "sjf", "tiresias", "tiresias-testbed", "Tiresias", "fifo-no-preempt", `sjf{"victims":"tentative"}`} {
		want := simulate(pol, profs[0])
		if want.PairLookups != 0 || want.Summary.SharedJobs != 0 {
			t.Errorf("%s: %d slowdowns looked up, %d jobs shared", pol, want.PairLookups, want.Summary.SharedJobs)
		}
		for i, prof := range profs[1:] {
			if got := simulate(pol, prof); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the simulation with profile variant %d differs from the one with the profile", pol, i+1)
			}
		}
	}
	if a, b := simulate("sjf-bsbf", profs[1]), simulate("sjf-bsbf", profs[2]); reflect.DeepEqual(a.Jobs, b.Jobs) || a.PairLookups == 0 {
		t.Errorf("sjf-bsbf gives the same jobs with ξ scaled by 0 and by 1.5 (%d slowdowns looked up): the trace does not test the slowdowns", a.PairLookups)
	}
}

// TestMemoSameOutputs: a sweep whose settings differ only in the slowdowns hands the exclusive
// policies' simulations on, its runs share their jobs, and every file it writes equals the one
// a run on its own writes.
func TestMemoSameOutputs(t *testing.T) {
	env := testEnv(t)
	needData(t, env)
	testbed := TraceSpec{Name: "testbed61", File: TraceTestbed61, Format: "muri"}
	c := ClusterSpec{Nodes: 4, GPUsPerNode: 8, MemGiB: 48}
	zero, more := 0.0, 1.5
	gavel := ProfileSpec{File: ProfileGavelV100, ModelMap: ModelMapGavel}
	scaled := func(s *float64) ProfileSpec { p := gavel; p.XiScale = s; return p }
	sym, sub := gavel, gavel
	sym.Derive, sub.Derive = DeriveSymmetric, DeriveSubBatch
	plan, err := expand([]Experiment{{
		Name: "M", Title: "memo", Seeds: []uint64{1, 2},
		Settings: []Setting{
			{Name: "xi0", Trace: testbed, Profile: scaled(&zero), Cluster: c},
			{Name: "xi1.5", Trace: testbed, Profile: scaled(&more), Cluster: c},
			{Name: "sym", Trace: testbed, Profile: sym, Cluster: c},
			// Other step times: the exclusive runs are simulated anew.
			{Name: "sub", Trace: testbed, Profile: sub, Cluster: c},
			{Name: "gen", Trace: TraceSpec{Name: "gen", Gen: &GenSpec{Jobs: 300, Load: 1.2, Pool: TracePhilly}}, Profile: gavel, Cluster: c},
		},
		Series: []Series{{Name: "tiresias-testbed", Policy: "tiresias-testbed"}, {Name: "fifo", Policy: "fifo"}, {Name: "sjf-bsbf", Policy: "sjf-bsbf"},
			// A sharing policy on one job per GPU never reads ξ either.
			{Name: "never-share", Policy: "sjf-bsbf", Variant: true, MaxShare: 1}},
		Analysis: Analysis{Baselines: []string{"fifo"}},
		// A sampled jobs.csv adds a note to each run's summary: a result handed on uncopied
		// would collect them.
		Keep: Keep{JobRows: 20},
	}, {
		// The same sharing runs as M's "sub" setting, under other names: simulated once.
		Name: "N", Title: "the same runs", Seeds: []uint64{1, 2},
		Settings: []Setting{{Name: "again", Trace: testbed, Profile: sub, Cluster: c}},
		Series:   []Series{{Name: "sjf-bsbf", Policy: "sjf-bsbf"}},
		Keep:     Keep{JobRows: 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	swept, alone := t.TempDir(), t.TempDir()
	in := NewInputs(env)
	outcomes, err := Sweep(context.Background(), in, plan, swept, SweepOptions{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outcomes {
		if o.Err != nil {
			t.Fatalf("%s: %v", o.Run.ID, o.Err)
		}
	}
	// Three policies that never share × two seeds, each simulated once for the three settings
	// that differ in ξ only (12 handed on), and N's two runs identical to M's (2); every run
	// shares its jobs with the other policies of its setting and seed.
	if in.memo.hits != 14 || len(in.memo.groups) != 0 || in.memo.reads != len(plan) || len(in.memo.inputs) != 0 || len(in.memo.keys) != 0 {
		t.Errorf("%d simulations handed on, %d groups left, %d runs read shared inputs, %d inputs left; want 14, 0, %d, 0",
			in.memo.hits, len(in.memo.groups), in.memo.reads, len(in.memo.inputs), len(plan))
	}
	for i := range plan {
		if err := plan[i].RunWith(context.Background(), NewInputs(env), alone); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	err = filepath.WalkDir(alone, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(alone, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join(swept, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the swept run's file differs from the lone run's (%v)", rel, err)
		}
		n++
		return nil
	})
	if err != nil || n < len(plan)*3 {
		t.Fatalf("compared %d files (%v)", n, err)
	}
}

// TestMemoGuard: a result that looked slowdowns up is not handed on whatever the policy says,
// a failed one neither, and a run waiting for another's simulation stops when its context ends.
func TestMemoGuard(t *testing.T) {
	zero, more := 0.0, 1.5
	runs := make([]RunSpec, 3)
	for i, s := range []*float64{&zero, &more, nil} {
		runs[i] = RunSpec{ID: fmt.Sprint(i), Policy: "fifo", Seed: 1,
			Profile: ProfileSpec{File: ProfileGavelV100, ModelMap: ModelMapGavel, XiScale: s}}
	}
	var key [32]byte
	ctx := context.Background()
	for _, c := range []struct {
		name string
		res  *sim.Result
		err  error
	}{
		{"looked slowdowns up", &sim.Result{PairLookups: 1}, nil},
		{"shared a GPU", &sim.Result{Summary: sim.Summary{SharedJobs: 1}}, nil},
		{"failed", nil, errors.New("time limit")},
	} {
		var m memo
		m.add(runs)
		first, second := m.share(&runs[0]), m.share(&runs[1])
		if first == nil || second == nil {
			t.Fatal("runs differing only in ξ are not grouped")
		}
		first(ctx, key, func() (*sim.Result, error) { return c.res, c.err })
		ran := false
		second(ctx, key, func() (*sim.Result, error) { ran = true; return &sim.Result{}, nil })
		if !ran || m.hits != 0 {
			t.Errorf("%s: handed on to the next run", c.name)
		}
	}

	var m memo
	m.add(runs)
	release := make(chan struct{})
	started := make(chan struct{})
	go m.share(&runs[0])(ctx, key, func() (*sim.Result, error) {
		close(started)
		<-release
		return &sim.Result{}, nil
	})
	<-started
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.share(&runs[1])(cctx, key, func() (*sim.Result, error) { return &sim.Result{}, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("a waiting run whose context ended returned %v", err)
	}
	close(release)
	res, err := m.share(&runs[2])(ctx, key, func() (*sim.Result, error) { t.Error("simulated again"); return nil, nil })
	if err != nil || res == nil || m.hits != 1 {
		t.Errorf("after the first run: %v, %v, %d hits", res, err, m.hits)
	}
}
