package analysis

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/results"
)

// Claim is a claim of the paper about the average-JCT reduction of one policy against a
// baseline, as a range of reductions in percent (positive = lower JCT).
type Claim struct {
	// ID is the reproduction target, e.g. "T1" (docs/paper.md §10).
	ID string
	// Policy and Baseline are the compared series.
	Policy, Baseline string
	// Lo and Hi bound the claimed reduction in percent, e.g. 27 and 33.
	Lo, Hi float64
	// UpTo marks an "up to Hi %" claim: any reduction in (0, Hi] agrees with it.
	UpTo bool
	// Text is the claim as the paper states it.
	Text string
}

// PolicyTiresiasTestbed is Tiresias with the SJF-BSBF authors' testbed settings.
const PolicyTiresiasTestbed = "tiresias-testbed"

// PaperClaims returns the paper's average-JCT claims (abstract of arXiv 2407.13088; docs/paper.md
// §10): T1, SJF-BSBF reduces average JCT by 27–33% against Tiresias, checked against both
// Tiresias settings (the simulator lineage's dlas-gpu, and the authors' testbed settings); T2,
// by up to 17% against SJF-FFS on large-scale traces.
func PaperClaims() []Claim {
	return []Claim{
		{ID: "T1", Policy: PolicySJFBSBF, Baseline: PolicyTiresias, Lo: 27, Hi: 33,
			Text: "27–33% lower average JCT than Tiresias"},
		{ID: "T1", Policy: PolicySJFBSBF, Baseline: PolicyTiresiasTestbed, Lo: 27, Hi: 33,
			Text: "27–33% lower average JCT than Tiresias (the authors' testbed settings)"},
		{ID: "T2", Policy: PolicySJFBSBF, Baseline: PolicySJFFFS, Lo: 0, Hi: 17, UpTo: true,
			Text: "up to 17% lower average JCT than SJF-FFS (large-scale traces)"},
	}
}

// Directions of a verdict: is the policy better than the baseline?
const (
	// Holds: the policy has the lower average JCT — the 95% CI of Δ, over at least MinDraws
	// independent draws, lies entirely below 0.
	Holds = "holds"
	// Contradicted: the baseline has the lower average JCT (the CI lies entirely above 0).
	Contradicted = "contradicted"
	// Inconclusive: the CI includes 0 (a direction); or the CI meets the claimed range while
	// the point estimate lies outside it (a magnitude).
	Inconclusive = "inconclusive"
	// Undetermined: fewer than MinDraws independent draws, so no verdict at all.
	Undetermined = "undetermined"
	// NoData: the runs lack the policy or the baseline.
	NoData = "n/a"
)

// Magnitudes of a verdict against the claimed range of reductions (and Inconclusive,
// Undetermined and NoData as above).
const (
	// Within: the point estimate of the reduction lies in the claimed range (and so its CI
	// meets the range).
	Within = "within"
	// Exceeds: the whole CI lies above the claimed range.
	Exceeds = "exceeds"
	// Weaker: the whole CI lies below the claimed range (for an "up to" claim: no reduction).
	Weaker = "weaker"
)

// MinDraws is the fewest independent draws (paired seeds) a row needs for a verdict: with
// fewer, a Student-t interval rests on a variance estimated from almost nothing, and a single
// deterministic trace has none at all (changing only the scheduling cadence of the 61-job
// trace once flipped its sign).
const MinDraws = 5

// Judge gives the direction and the magnitude of a measured Δ average JCT (percent, negative =
// the policy better) against a claim. Values are rounded to 0.1 percentage point, as displayed.
// R is the interval of the reduction, −CI, and p its point estimate −Δ.
//
//   - Fewer than MinDraws draws: undetermined, for both.
//   - Direction: holds if R lies entirely above 0, contradicted if entirely below, else
//     inconclusive.
//   - Magnitude, for a claimed range [Lo, Hi] (an "up to Hi" claim: (0, Hi]): exceeds if R lies
//     entirely above Hi, weaker if entirely below Lo (up to: R ≤ 0), within if p lies in the
//     range, else inconclusive (R meets the range, p does not).
func Judge(c Claim, d Delta) (direction, magnitude string) {
	if math.IsNaN(d.Mean) {
		return NoData, NoData
	}
	if d.N < MinDraws || !d.HasCI() {
		return Undetermined, Undetermined
	}
	r1 := func(x float64) float64 { return math.Round(x*10) / 10 }
	p, lo, hi := r1(-d.Mean), r1(-d.Hi()), r1(-d.Lo())
	switch {
	case lo > 0:
		direction = Holds
	case hi < 0:
		direction = Contradicted
	default:
		direction = Inconclusive
	}
	inRange := p >= c.Lo && p <= c.Hi
	if c.UpTo {
		inRange = p > 0 && p <= c.Hi
	}
	switch {
	case lo > c.Hi:
		magnitude = Exceeds
	case c.UpTo && hi <= 0, !c.UpTo && hi < c.Lo:
		magnitude = Weaker
	case inRange:
		magnitude = Within
	default:
		magnitude = Inconclusive
	}
	return direction, magnitude
}

// ClaimRow is one claim checked on one experiment × trace × setting.
type ClaimRow struct {
	Claim Claim
	// Group holds the policy's runs, Baseline the baseline's, in the same cell.
	Group, Baseline *Group
	// Delta is Δ average JCT of the policy against the baseline, paired by seed.
	Delta Delta
	// Direction and Magnitude are Judge's verdict.
	Direction, Magnitude string
	// Sensitivity says why the row is a sensitivity analysis rather than evidence: how a run's
	// profile departs from the measurements on purpose (summary.json's counterfactual, e.g. "ξ
	// scaled ×0.5"). Empty for evidence.
	Sensitivity string
	// SameAs is the index of the row (of the same claim and baseline) whose runs include all
	// of this row's, or -1. Such a row repeats another's evidence: E6-xi at scale 1 is E6-load
	// at load 1, seeds 1–5.
	SameAs int
	// Where names the cell: experiment, trace and what varies within the experiment
	// (Setting, e.g. "load=1.5"; "" when nothing varies).
	Where, Setting string
}

// Counted reports whether the row counts in the evidence tally: neither a sensitivity row nor
// one that repeats another's runs.
func (r *ClaimRow) Counted() bool { return r.Sensitivity == "" && r.SameAs < 0 }

// ClaimSet is the paper's claims checked on a set of runs: one row per claim and cell with
// sjf-bsbf runs and the claim's baseline.
type ClaimSet struct {
	Rows []ClaimRow
	l    layout
}

// CheckClaims checks the paper's claims on the runs: for every experiment × trace × setting
// that has sjf-bsbf runs, one row per claim whose baseline the cell has, with Δ average JCT
// (paired by seed, with its 95% CI), the verdict (Judge), whether it is a sensitivity row and
// whether its runs repeat another row's.
func CheckClaims(runs []*results.Run) (*ClaimSet, error) {
	groups, err := GroupRuns(runs)
	if err != nil {
		return nil, err
	}
	claims := PaperClaims()
	var cells []*Group // one representative group (the policy's) per cell
	for _, g := range groups {
		if g.Series == claims[0].Policy {
			cells = append(cells, g)
		}
	}
	set := &ClaimSet{l: newLayout(cells)}
	set.l.perExperiment(cells)
	var draws [][]string // per row: the paired runs' fingerprints
	for _, g := range cells {
		for _, c := range claims {
			b := findSeries(groups, g.cell(), c.Baseline)
			if b == nil {
				continue
			}
			d := RelDelta(g, b, AvgJCT)
			dir, mag := Judge(c, d)
			r := ClaimRow{Claim: c, Group: g, Baseline: b, Delta: d, Direction: dir, Magnitude: mag, SameAs: -1,
				Sensitivity: counterfactual(g, b), Where: set.l.where(g), Setting: set.l.varying(g)}
			set.Rows = append(set.Rows, r)
			draws = append(draws, pairedFingerprints(g, b))
		}
	}
	// A row whose paired runs are all among another row's (of the same claim and baseline)
	// repeats that row's evidence: it points to the largest such row, the first of equals.
	for i := range set.Rows {
		best := -1
		for j := range set.Rows {
			ri, rj := &set.Rows[i], &set.Rows[j]
			if i == j || ri.Claim != rj.Claim || len(draws[j]) < len(draws[i]) || !subset(draws[i], draws[j]) {
				continue
			}
			if len(draws[j]) == len(draws[i]) && j > i {
				continue // equal sets: the first one counts
			}
			if best < 0 || len(draws[j]) > len(draws[best]) {
				best = j
			}
		}
		set.Rows[i].SameAs = best
	}
	return set, nil
}

// counterfactual returns the first counterfactual description among the runs of the groups.
func counterfactual(groups ...*Group) string {
	for _, g := range groups {
		for _, r := range g.Runs {
			if r.Summary.Counterfactual != "" {
				return r.Summary.Counterfactual
			}
		}
	}
	return ""
}

// pairedFingerprints identifies the simulations behind a row: for each seed both groups have,
// the fingerprints of the two runs. Two runs of the same inputs give the same summary apart
// from their labels, so equal fingerprints mean the same simulation reported twice.
func pairedFingerprints(x, base *Group) []string {
	bySeed := map[uint64]string{}
	for _, r := range base.Runs {
		bySeed[r.Summary.Seed] = fingerprint(r)
	}
	var out []string
	for _, r := range x.Runs {
		if b, ok := bySeed[r.Summary.Seed]; ok {
			out = append(out, fingerprint(r)+"|"+b)
		}
	}
	slices.Sort(out)
	return out
}

// fingerprint hashes a run's summary without its labels and notes (which name the experiment
// and setting, and what its directory keeps, not the simulation).
func fingerprint(r *results.Run) string {
	s := r.Summary
	s.Labels, s.Notes = nil, nil
	h := sha256.Sum256([]byte(fmt.Sprintf("%+v", s)))
	return hex.EncodeToString(h[:])
}

// subset reports whether every element of the sorted a is in the sorted b.
func subset(a, b []string) bool {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			return false
		}
	}
	return true
}

// where names a cell: experiment, trace and the setting's varying part.
func (l layout) where(g *Group) string {
	parts := []string{}
	if g.Experiment != "" {
		parts = append(parts, g.Experiment)
	}
	parts = append(parts, g.Trace)
	if set := l.varying(g); set != "" {
		parts = append(parts, set)
	}
	return strings.Join(parts, " ")
}

// varying returns what of g's setting the layout shows.
func (l layout) varying(g *Group) string {
	switch {
	case l.byExp != nil:
		return l.byExp[g.Experiment][g.Setting]
	case l.settings != nil:
		return l.settings[g.Setting]
	}
	return ""
}

// PaperRange writes a claim's range as the tables do: "−33 to −27", "up to −17".
func (c Claim) PaperRange() string {
	if c.UpTo {
		return "up to −" + fmtFixed(c.Hi, 0)
	}
	return "−" + fmtFixed(c.Hi, 0) + " to −" + fmtFixed(c.Lo, 0)
}

// Comparison writes a claim's comparison: "sjf-bsbf vs tiresias".
func (c Claim) Comparison() string { return c.Policy + " vs " + c.Baseline }

// Table renders the claims table: per row the paper's Δ and ours with its CI, the draws, the
// verdict, whether it is a sensitivity row and whether it counts in the tally. The rules are
// repeated in the notes.
func (s *ClaimSet) Table() Table {
	t := Table{
		Title: "Paper claims vs this reproduction (average JCT)",
		Header: s.l.header("claim", "comparison", "paper Δ avg JCT (%)", "our Δ avg JCT (%)", "95% CI (%)",
			"draws", "direction", "magnitude", "sensitivity", "counted", "remark"),
	}
	for _, r := range s.Rows {
		d := r.Delta
		ci, rem := "", ""
		if d.HasCI() {
			ci = "[" + fmtSigned(d.Lo(), 1) + ", " + fmtSigned(d.Hi(), 1) + "]"
		}
		if d.N < MinDraws {
			rem = fmt.Sprintf("fewer than %d draws: no verdict", MinDraws)
		}
		if !d.Paired {
			rem = joinRemark(rem, "seeds unpaired: ratio of means")
		}
		sens, counted := "no", "yes"
		if r.Sensitivity != "" {
			sens, counted = "yes", "no"
			rem = joinRemark(rem, r.Sensitivity+": a sensitivity analysis, not evidence")
		}
		if r.SameAs >= 0 {
			counted = "no"
			rem = joinRemark(rem, "the runs of "+s.Rows[r.SameAs].Where)
		}
		t.Rows = append(t.Rows, s.l.row(r.Group, r.Claim.ID, r.Claim.Comparison(), r.Claim.PaperRange(), fmtSigned(d.Mean, 1), ci,
			strconv.Itoa(d.N), r.Direction, r.Magnitude, sens, counted, rem))
	}
	t.Notes = []string{
		"Δ avg JCT = (sjf-bsbf − baseline) / baseline × 100, paired by seed; negative means sjf-bsbf has the lower (better) average JCT. The paper's reductions are written as negative Δ.",
		"Claims (docs/analysis.md): T1 sjf-bsbf 27–33% lower average JCT than Tiresias, checked against tiresias (the simulator lineage's dlas-gpu) and tiresias-testbed (the authors' testbed settings); T2 up to 17% lower than sjf-ffs on large-scale traces. The paper states them over its traces; they are checked per trace and setting here.",
		fmt.Sprintf("draws: independent draws behind the row (seeds that change the trace: a generated trace, the Philly table's model assignment, or a trace file's permuted models); a row needs at least %d for a verdict (else undetermined).", MinDraws),
		"direction: holds if the 95% CI of Δ lies entirely below 0, contradicted if entirely above, inconclusive if it includes 0.",
		"magnitude: the reduction −Δ against the claimed range: exceeds if its CI lies entirely above the range, weaker if entirely below (T2: no reduction), within if its point estimate lies in the range, inconclusive if the CI meets the range but the point estimate does not. Values are compared rounded to 0.1 pp, as shown.",
		"sensitivity: yes where a run's profile departs from the measurements on purpose (ξ scaled, made symmetric): such rows show how the answer depends on the interference and are not evidence. counted: no for sensitivity rows and for rows whose runs are all runs of another row (named in the remark), so that the tally counts each simulation once.",
		"95% CI: two-sided Student-t interval over the per-draw Δ (n−1 degrees of freedom).",
		"Nothing is tuned to agree with the paper: the profile, traces and policies are those of the runs.",
	}
	if len(s.Rows) == 0 {
		t.Notes = append(t.Notes, "No sjf-bsbf runs with a baseline: nothing to compare.")
	}
	return t
}

// Claims returns the claims table of the runs (CheckClaims, rendered by ClaimSet.Table).
func Claims(runs []*results.Run) (Table, error) {
	s, err := CheckClaims(runs)
	if err != nil {
		return Table{}, err
	}
	return s.Table(), nil
}

func joinRemark(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
