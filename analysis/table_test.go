package analysis

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/internal/golden"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/results"
)

// allFormats returns the table formats with their golden-file extensions.
func allFormats() []struct {
	f   Format
	ext string
} {
	return []struct {
		f   Format
		ext string
	}{{Text, "txt"}, {Markdown, "md"}, {CSV, "csv"}, {LaTeX, "tex"}}
}

// loadRuns loads every run directory under testdata/runs/<sub>.
func loadRuns(t *testing.T, sub string) []*results.Run {
	t.Helper()
	dirs, err := results.Discover(filepath.Join("testdata", "runs", sub))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := results.LoadRuns(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func loadProfile(t *testing.T, name string) *profile.Table {
	t.Helper()
	p, err := profile.LoadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkTables renders tables in every format and compares each with its golden file.
func checkTables(t *testing.T, name string, tables ...Table) {
	t.Helper()
	for _, f := range allFormats() {
		var buf bytes.Buffer
		if err := RenderAll(&buf, f.f, tables...); err != nil {
			t.Fatalf("%s: render %s: %v", name, f.f, err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", name+"."+f.ext), buf.Bytes())
		// Rendering is deterministic.
		var again bytes.Buffer
		if err := RenderAll(&again, f.f, tables...); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), again.Bytes()) {
			t.Errorf("%s: rendering %s twice gave different bytes", name, f.f)
		}
	}
}

func TestRenderSpecialCharacters(t *testing.T) {
	tab := Table{
		Title:  `Escapes: 50% & $x_1$ #1 {a} ~ ^ \ | "q"`,
		Header: []string{"name", "Δ (%)", "note"},
		Rows: [][]string{
			{"a|b", "−12.5", "ξ ≥ 1, × ÷ …"},
			{"c,d", "+3.0", "line\nbreak"},
			{"e", "–", "n/a"},
		},
		Notes: []string{"first note: 100% sure", "second\nnote"},
	}
	checkTables(t, "render-special", tab)
}

func TestSummaryTables(t *testing.T) {
	e1 := loadRuns(t, "E1")
	sum, err := Summarize(e1, SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkTables(t, "summary-e1", sum)
	sumFFS, err := Summarize(e1, SummaryOptions{Baseline: PolicySJFFFS})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(sumFFS.Header, ","), "Δ avg JCT vs sjf-ffs (%)") {
		t.Errorf("baseline sjf-ffs: header %v", sumFFS.Header)
	}
	all := loadRuns(t, "")
	sumAll, err := Summarize(all, SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkTables(t, "summary-all", sumAll)
	claims, err := Claims(all)
	if err != nil {
		t.Fatal(err)
	}
	checkTables(t, "claims-all", claims)
	jobs, err := JobStats(e1)
	if err != nil {
		t.Fatal(err)
	}
	checkTables(t, "jobs-e1", jobs)
}

func TestProfileTables(t *testing.T) {
	a, b := loadProfile(t, "profile-a.json"), loadProfile(t, "profile-b.json")
	checkTables(t, "profile-show-a", ProfileTables(a, "profile-a.json")...)
	checkTables(t, "profile-diff-a-b", ProfileDiff(a, b, "profile-a.json", "profile-b.json")...)
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"text": Text, "md": Markdown, "markdown": Markdown, "CSV": CSV, "latex": LaTeX, "tex": LaTeX} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFormat("html"); err == nil {
		t.Error("ParseFormat(html): no error")
	}
}

func TestLaTeXEscape(t *testing.T) {
	t.Parallel()
	got := LaTeXEscape(`a_b & 50% $ # {x} ~ ^ \ −3 Δ`)
	want := `a\_b \& 50\% \$ \# \{x\} \textasciitilde{} \textasciicircum{} \textbackslash{} \ensuremath{-}3 \ensuremath{\Delta}`
	if got != want {
		t.Errorf("LaTeXEscape\n got: %s\nwant: %s", got, want)
	}
}

// checkGolden compares got with the golden file at path.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

func TestCSVIsMachineReadable(t *testing.T) {
	t.Parallel()
	tab := Table{
		Title:  "a title",
		Header: []string{"name", "Δ (%)", "95% CI (%)", "time (s)", "paper", "mixed"},
		Rows: [][]string{
			{"a", "−12.5", "[−35.1, +16.8]", "10.0 ± 2.5", "−33 to −27", "1.5"},
			{"b", "+3.0", "–", "n/a", "up to −17", "x"},
			{"c", "62.7%", "[0.0, 1.0]", "7.0 ± 0.0", "", "–"},
		},
		Notes: []string{"a note"},
	}
	var buf bytes.Buffer
	if err := tab.Render(&buf, CSV); err != nil {
		t.Fatal(err)
	}
	want := `name,Δ (%),95% CI low (%),95% CI high (%),time (s),time ± 95% CI (s),paper,mixed
a,-12.5,-35.1,16.8,10.0,2.5,-33 to -27,1.5
b,3.0,,,,,up to -17,x
c,62.7,0.0,1.0,7.0,0.0,,
`
	if got := buf.String(); got != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
	}
}
