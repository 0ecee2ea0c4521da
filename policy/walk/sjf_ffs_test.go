package walk

import (
	"fmt"
	"testing"

	"github.com/sharebench/sharebench/trace"
)

// TestSharingWith checks the explanation against fmt's formatting, which the decision logs
// were written with.
func TestSharingWith(t *testing.T) {
	for _, ids := range [][]trace.JobID{nil, {7}, {0, 12, 3}, {-1, 1 << 40}} {
		if got, want := sharingWith(ids), fmt.Sprintf("first fit, sharing with %v", ids); got != want {
			t.Errorf("sharingWith(%v) = %q, want %q", ids, got, want)
		}
	}
}
