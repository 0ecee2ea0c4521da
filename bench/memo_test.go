package bench

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sharebench/sharebench/policy"
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
	for _, info := range policy.Builtin().Infos() {
		if info.Name == policy.KeyExternal {
			continue
		}
		p, err := policy.Builtin().New(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.(policy.Exclusive); !ok {
			sharing[info.Name] = true
		}
	}
	if want := map[string]bool{policy.KeySJFFFS: true, policy.KeySJFBSBF: true}; !reflect.DeepEqual(sharing, want) {
		t.Errorf("sharing policies %v, want %v", sharing, want)
	}
	for _, pol := range []string{"fifo", "sjf", "tiresias", "tiresias-testbed", "Tiresias", "fifo-no-preempt", `sjf{"victims":"tentative"}`} {
		want := simulate(pol, profs[0])
		for i, prof := range profs[1:] {
			if got := simulate(pol, prof); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the simulation with profile variant %d differs from the one with the profile", pol, i+1)
			}
		}
	}
	if reflect.DeepEqual(simulate("sjf-bsbf", profs[1]), simulate("sjf-bsbf", profs[2])) {
		t.Error("sjf-bsbf gives the same simulation with ξ scaled by 0 and by 1.5: the trace does not test the slowdowns")
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
	sym := gavel
	sym.Derive = DeriveSymmetric
	plan, err := expand([]Experiment{{
		Name: "M", Title: "memo", Seeds: []uint64{1, 2},
		Settings: []Setting{
			{Name: "xi0", Trace: testbed, Profile: scaled(&zero), Cluster: c},
			{Name: "xi1.5", Trace: testbed, Profile: scaled(&more), Cluster: c},
			{Name: "sym", Trace: testbed, Profile: sym, Cluster: c},
			{Name: "gen", Trace: TraceSpec{Name: "gen", Gen: &GenSpec{Jobs: 300, Load: 1.2, Pool: TracePhilly}}, Profile: gavel, Cluster: c},
		},
		Series:   []Series{{Name: "tiresias-testbed", Policy: "tiresias-testbed"}, {Name: "fifo", Policy: "fifo"}, {Name: "sjf-bsbf", Policy: "sjf-bsbf"}},
		Analysis: Analysis{Baselines: []string{"fifo"}},
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
	// Two exclusive policies × two seeds, each simulated once for three settings; every run
	// shares its jobs with the two other policies of its setting and seed.
	if in.memo.hits != 8 || len(in.memo.groups) != 0 || in.memo.reads != len(plan) || len(in.memo.inputs) != 0 {
		t.Errorf("%d simulations handed on, %d groups left, %d runs read shared inputs, %d inputs left; want 8, 0, %d, 0",
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
