package walk

import (
	"math/rand/v2"
	"testing"

	"github.com/sharebench/sharebench/policy/schedulers"
)

// TestYarnTreeAsRule: the fast executor's YARN on an empty cluster lands the same jobs as the
// rule's (schedulers.YARNNodes), which scans the nodes, for random sequences of jobs of up to
// three nodes' worth of GPUs on clusters of up to 40 nodes.
func TestYarnTreeAsRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 41))
	var landed, failed int
	for range 3000 {
		nodes, per := 1+rng.IntN(40), []int{1, 2, 4, 8}[rng.IntN(4)]
		var rule schedulers.YARNNodes
		var tree yarnTree
		rule.Reset(nodes, per)
		tree.reset(nodes, per)
		for range 3 * nodes {
			g := 1 + rng.IntN(3*per)
			if rng.IntN(2) == 0 {
				g = 1 + rng.IntN(per)
			}
			a, b := rule.Take(g), tree.take(g)
			if a != b {
				t.Fatalf("%dx%d: a job of %d GPUs lands %v by the rule, %v by the tree", nodes, per, g, a, b)
			}
			if a {
				landed++
			} else {
				failed++
			}
		}
	}
	if landed < 1000 || failed < 1000 {
		t.Errorf("%d landed, %d failed: the cases do not exercise both", landed, failed)
	}
}
