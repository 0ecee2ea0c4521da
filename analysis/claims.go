package analysis

import (
	"fmt"
	"math"
	"strconv"

	"github.com/sharebench/sharebench/results"
)

// Claim is a claim of the paper about the average-JCT reduction of one policy against a
// baseline, as a range of reductions in percent (positive = lower JCT).
type Claim struct {
	// ID is the reproduction target, e.g. "T1" (SPEC.md §10).
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

// PaperClaims returns the paper's average-JCT claims (abstract of arXiv 2407.13088; SPEC.md
// §10): T1, SJF-BSBF reduces average JCT by 27–33% against Tiresias; T2, by up to 17%
// against SJF-FFS on large-scale traces.
func PaperClaims() []Claim {
	return []Claim{
		{ID: "T1", Policy: PolicySJFBSBF, Baseline: PolicyTiresias, Lo: 27, Hi: 33,
			Text: "27–33% lower average JCT than Tiresias"},
		{ID: "T2", Policy: PolicySJFBSBF, Baseline: PolicySJFFFS, Lo: 0, Hi: 17, UpTo: true,
			Text: "up to 17% lower average JCT than SJF-FFS (large-scale traces)"},
	}
}

// Verdicts.
const (
	// Reproduced: the measured reduction agrees with the claim (or exceeds it).
	Reproduced = "reproduced"
	// Weaker: a reduction, but smaller than the claimed range.
	Weaker = "weaker"
	// Contradicted: no reduction; the policy is not better than the baseline.
	Contradicted = "contradicted"
	// NoData: the runs lack the policy or the baseline.
	NoData = "n/a"
)

// Verdict judges a measured Δ average JCT (percent, negative = policy better) against a
// claim. The reduction r = −Δ.Mean is rounded to 0.1 percentage point, as displayed, then:
//
//   - r ≤ 0: contradicted (no reduction);
//   - range claim (T1): r ≥ Lo reproduced (within or beyond the range), 0 < r < Lo weaker;
//   - "up to" claim (T2): r > 0 reproduced.
//
// The remark adds what the verdict leaves out: a reduction beyond the claimed range, a CI
// that includes zero (the sign is not established) or lies entirely on the wrong side, or a
// single seed (no CI).
func Verdict(c Claim, d Delta) (verdict, remark string) {
	if math.IsNaN(d.Mean) {
		return NoData, "no data"
	}
	r := math.Round(-d.Mean*10) / 10
	switch {
	case r <= 0:
		verdict = Contradicted
	case c.UpTo || r >= c.Lo:
		verdict = Reproduced
	default:
		verdict = Weaker
	}
	var rem []string
	if r > c.Hi {
		rem = append(rem, fmt.Sprintf("exceeds the claimed %s%%", fmtFixed(c.Hi, 0)))
	}
	switch {
	case !d.HasCI():
		rem = append(rem, "single seed: no CI")
	case d.Lo() > 0:
		rem = append(rem, "CI entirely above 0 (worse)")
	case d.Hi() >= 0:
		rem = append(rem, "CI includes 0")
	}
	for i, s := range rem {
		if i > 0 {
			remark += "; "
		}
		remark += s
	}
	return verdict, remark
}

// Claims puts the paper's claims beside our measurements: for every experiment × trace ×
// setting that has sjf-bsbf runs, one row per claim with the paper's Δ, our Δ average JCT
// (paired by seed, with its 95% CI), the number of paired seeds and a verdict (see Verdict).
// The rules are repeated in the table notes.
func Claims(runs []*results.Run) (Table, error) {
	groups, err := GroupRuns(runs)
	if err != nil {
		return Table{}, err
	}
	claims := PaperClaims()
	var cells []*Group // one representative group (the policy's) per cell
	for _, g := range groups {
		if g.Series == claims[0].Policy {
			cells = append(cells, g)
		}
	}
	l := newLayout(cells)
	t := Table{
		Title: "Paper claims vs this reproduction (average JCT)",
		Header: l.header("claim", "comparison", "paper Δ avg JCT (%)", "our Δ avg JCT (%)", "95% CI (%)",
			"seeds", "verdict", "remark"),
	}
	for _, g := range cells {
		for _, c := range claims {
			paper := "−" + fmtFixed(c.Hi, 0) + " to −" + fmtFixed(c.Lo, 0)
			if c.UpTo {
				paper = "up to −" + fmtFixed(c.Hi, 0)
			}
			comparison := c.Policy + " vs " + c.Baseline
			b := findSeries(groups, g.cell(), c.Baseline)
			if b == nil {
				t.Rows = append(t.Rows, l.row(g, c.ID, comparison, paper, "–", "–", "0", NoData, "no "+c.Baseline+" runs"))
				continue
			}
			d := RelDelta(g, b, AvgJCT)
			v, rem := Verdict(c, d)
			ci := "–"
			if d.HasCI() {
				ci = "[" + fmtSigned(d.Lo(), 1) + ", " + fmtSigned(d.Hi(), 1) + "]"
			}
			if !d.Paired {
				rem = joinRemark(rem, "seeds unpaired: ratio of means")
			}
			t.Rows = append(t.Rows, l.row(g, c.ID, comparison, paper, fmtSigned(d.Mean, 1), ci, strconv.Itoa(d.N), v, rem))
		}
	}
	t.Notes = []string{
		"Δ avg JCT = (sjf-bsbf − baseline) / baseline × 100, paired by seed; negative means sjf-bsbf has the lower (better) average JCT. The paper's reductions are written as negative Δ.",
		"Claims (SPEC.md §10): T1 sjf-bsbf 27–33% lower average JCT than tiresias; T2 up to 17% lower than sjf-ffs on large-scale traces. The paper states them over its traces; they are checked per trace here.",
		"Verdict on the reduction r = −Δ rounded to 0.1 pp: r ≤ 0 contradicted; T1: r ≥ 27 reproduced (within or beyond the range), 0 < r < 27 weaker; T2: r > 0 reproduced (\"up to\").",
		"95% CI: two-sided Student-t interval over the per-seed Δ (n−1 degrees of freedom); the remark says when it includes 0 or lies entirely on the wrong side.",
		"Nothing is tuned to agree with the paper: the profile, traces and policies are those of the runs.",
	}
	if len(cells) == 0 {
		t.Notes = append(t.Notes, "No sjf-bsbf runs: nothing to compare.")
	}
	return t, nil
}

func joinRemark(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
