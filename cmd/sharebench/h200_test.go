package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/internal/golden"
)

// TestH200Documents requires the regions of REPRODUCE.md that cite the H200 measurement to be
// what the committed outputs give now: h200/... from results/h200 (sharebench report --as h200),
// replay/fidelity-h200 from the physical replay in results/replay-h200 (sharebench fidelity) and
// compare/h200 from results/paper and results/h200 (sharebench compare). With -update it
// rewrites the last two; "make reproduce-h200" rewrites the first.
func TestH200Documents(t *testing.T) {
	root := filepath.Join("..", "..")
	doc := filepath.Join(root, "REPRODUCE.md")
	if _, stderr, err := cli(t, "report", filepath.Join(root, "results", "h200"), "--as", "h200", "--check", doc); err != nil {
		t.Errorf("the h200 regions: %v %s", err, stderr)
	}
	replay := filepath.Join(root, "results", "replay-h200", "sjf-bsbf")
	for _, c := range []struct {
		region string
		args   []string
	}{
		{"replay/fidelity-h200", []string{"fidelity", replay, filepath.Join(replay, "sim"), "--format", "md"}},
		{"compare/h200", []string{"compare", filepath.Join(root, "results", "paper"), filepath.Join(root, "results", "h200")}},
	} {
		want, stderr, err := cli(t, c.args...)
		if err != nil {
			t.Fatalf("%s: %v %s", c.region, err, stderr)
		}
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		open, end := "<!-- generated:"+c.region+" -->\n", "<!-- end:"+c.region+" -->"
		i, j := strings.Index(text, open), strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("REPRODUCE.md has no region %s", c.region)
		}
		i += len(open)
		if got := text[i:j]; got != want {
			if golden.Updating() {
				if err := os.WriteFile(doc, []byte(text[:i]+want+text[j:]), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("REPRODUCE.md: region %s differs from %s: run go test ./cmd/sharebench -run TestH200Documents -update", c.region, strings.Join(c.args[:1], " "))
		}
	}
}

// TestRepoName: a reproduction with --profile names inputs inside the repository as "repo:"
// names (no machine path in committed results) and keeps the others as they are.
func TestRepoName(t *testing.T) {
	root := filepath.FromSlash("/src/sharebench")
	for _, c := range []struct{ p, want string }{
		{filepath.FromSlash("/src/sharebench/results/profiles/h200.json"), "repo:results/profiles/h200.json"},
		{filepath.FromSlash("/src/other/p.json"), filepath.FromSlash("/src/other/p.json")},
		{filepath.FromSlash("/src/sharebench-x/p.json"), filepath.FromSlash("/src/sharebench-x/p.json")},
		{"", ""},
	} {
		if got := repoName(root, c.p); got != c.want {
			t.Errorf("repoName(%q) = %q, want %q", c.p, got, c.want)
		}
	}
	if got := repoName("", "/a/b.json"); got != "/a/b.json" {
		t.Errorf("outside a checkout: %q", got)
	}
}
