package bench

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/internal/muripub"
	"github.com/sharebench/sharebench/results"
)

// muriFigure lists the schedulers of Muri's Figures 9 and 10 in the figures' order, each with the
// scheduler its figure normalises to; the SJF family follows, normalised to both.
var muriFigure = []struct{ policy, figure, norm string }{
	{"srtf", "9", "muri-s"},
	{"srsf", "9", "muri-s"},
	{"muri-s", "9", "muri-s"},
	{"tiresias", "10", "muri-l"},
	{"antman", "10", "muri-l"},
	{"themis", "10", "muri-l"},
	{"muri-l", "10", "muri-l"},
	{"sjf", "9", "muri-s"},
	{"sjf-ffs", "9", "muri-s"},
	{"sjf-bsbf", "9", "muri-s"},
	{"sjf", "10", "muri-l"},
	{"sjf-ffs", "10", "muri-l"},
	{"sjf-bsbf", "10", "muri-l"},
}

// muriRegions renders E7 as Muri's artifact reports its study: "e7-published", every scheduler's
// average JCT, makespan and p99 JCT on every trace beside the published value (internal/muripub),
// and "e7-figures", the values normalised as Figures 9 and 10 plot them, ours beside the
// published ones.
func muriRegions(runs []*results.Run) (published, figures string, err error) {
	// ours[policy][trace] = avg JCT, makespan, p99 JCT.
	ours := map[string]map[string][3]float64{}
	for _, r := range runs {
		// A run's directory is <root>/E7/<setting>/<series>/seed-<n>.
		series := filepath.Base(filepath.Dir(r.Dir))
		if ours[series] == nil {
			ours[series] = map[string][3]float64{}
		}
		s := r.Summary
		ours[series][s.Labels["trace"]] = [3]float64{s.AvgJCTS, s.MakespanS, s.P99JCTS}
	}

	pub := analysis.Table{Header: []string{"policy", "trace"}}
	for _, m := range muripub.Metrics {
		pub.Header = append(pub.Header, m+": ours (s)", "published (s)", "Δ (%)")
	}
	for _, f := range muriFigure[:7] {
		for k, tr := range muripub.Traces {
			got, ok := ours[f.policy][tr]
			if !ok {
				continue
			}
			row := []string{"`" + f.policy + "`", tr}
			for m := range muripub.Metrics {
				want := muripub.Values[f.policy][m][k]
				row = append(row, fmt.Sprintf("%.0f", got[m]), fmt.Sprintf("%.0f", want), analysis.FormatSigned(100*(got[m]/want-1), 2))
			}
			pub.Rows = append(pub.Rows, row)
		}
	}

	fig := analysis.Table{Header: []string{"figure", "policy", "trace"}}
	for _, m := range muripub.Metrics {
		fig.Header = append(fig.Header, m+": ours", "published")
	}
	for _, f := range muriFigure {
		for k, tr := range muripub.Traces {
			got, ok := ours[f.policy][tr]
			base, okB := ours[f.norm][tr]
			if !ok || !okB {
				continue
			}
			row := []string{f.figure, "`" + f.policy + "`", tr}
			for m := range muripub.Metrics {
				row = append(row, fmt.Sprintf("%.3f", got[m]/base[m]))
				if want, ok := muripub.Values[f.policy]; ok {
					row = append(row, fmt.Sprintf("%.3f", want[m][k]/muripub.Values[f.norm][m][k]))
				} else {
					row = append(row, "–")
				}
			}
			fig.Rows = append(fig.Rows, row)
		}
	}
	var a, b bytes.Buffer
	if err := pub.Render(&a, analysis.Markdown); err != nil {
		return "", "", err
	}
	if err := fig.Render(&b, analysis.Markdown); err != nil {
		return "", "", err
	}
	return a.String(), b.String(), nil
}
