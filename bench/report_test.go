package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportRegions(t *testing.T) {
	rep := &Report{}
	rep.add("a", "one\ntwo")
	rep.add("b", "three\n")
	doc := "intro\n<!-- generated:a -->\nstale\n<!-- end:a -->\ntext\n<!-- generated:b -->\n<!-- end:b -->\n"
	got, err := rep.Render(doc, "doc.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n<!-- generated:a -->\none\ntwo\n<!-- end:a -->\ntext\n<!-- generated:b -->\nthree\n<!-- end:b -->\n"
	if got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
	if again, _ := rep.Render(got, "doc.md"); again != got {
		t.Error("rendering twice changes the document")
	}
	for _, bad := range []string{"<!-- generated:c -->\n<!-- end:c -->\n", "<!-- generated:a -->\nno end\n"} {
		if _, err := rep.Render(bad, "doc.md"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestReportPrefix: a document citing two reproductions; each report writes its own regions
// (plain names, or PREFIX/NAME) and leaves the other's alone.
func TestReportPrefix(t *testing.T) {
	doc := "<!-- generated:a -->\n<!-- end:a -->\n<!-- generated:h200/a -->\n<!-- end:h200/a -->\n"
	plain, other := &Report{}, &Report{Prefix: "h200"}
	plain.add("a", "plain")
	other.add("a", "measured")
	got, err := plain.Render(doc, "doc.md")
	if err != nil {
		t.Fatal(err)
	}
	if got, err = other.Render(got, "doc.md"); err != nil {
		t.Fatal(err)
	}
	want := "<!-- generated:a -->\nplain\n<!-- end:a -->\n<!-- generated:h200/a -->\nmeasured\n<!-- end:h200/a -->\n"
	if got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
	if _, err := other.Render("<!-- generated:h200/b -->\n<!-- end:h200/b -->\n", "doc.md"); err == nil {
		t.Error("accepted a missing part of its own")
	}
}

// TestReproduceMatchesResults requires every number REPRODUCE.md and docs/simulator.md cite in
// their generated regions to be what results/paper gives now, so that none can drift: after a
// change of results, "make reproduce" (or "make figures") rewrites them.
func TestReproduceMatchesResults(t *testing.T) {
	env := testEnv(t)
	out := filepath.Join(env.Root, "results", "paper")
	rep, err := BuildReport(out, Plan(LabelPaper), Experiments(LabelPaper))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"REPRODUCE.md", filepath.Join("docs", "simulator.md")} {
		path := filepath.Join(env.Root, doc)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		names, err := RegionNames(string(data))
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: no generated regions (%v)", doc, err)
		}
		got, err := rep.Render(string(data), doc)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(data) {
			for _, n := range names {
				s, e, _ := regionSpan(string(data), n)
				if string(data)[s:e] != rep.Regions[n] {
					t.Errorf("%s: region %s differs from results/paper: run make figures (sharebench report results/paper --update %s)", doc, n, doc)
				}
			}
		}
		if strings.Contains(string(data), "<!-- generated:answer -->\n<!-- end:answer -->") {
			t.Errorf("%s: the answer is empty", doc)
		}
	}
}
