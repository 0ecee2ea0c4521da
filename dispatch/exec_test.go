package dispatch

import (
	"strings"
	"testing"
)

func TestSafeName(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"resnet50", "a.b_c-d", "GPU-0f3a", "sb-1234abcd-r0-pair-A-a1b2c3"} {
		if !SafeName(s) {
			t.Errorf("SafeName(%q) = false", s)
		}
	}
	for _, s := range []string{"", "-rm", ".x", "a b", "a;b", "a/b", "$(x)", "a\nb", strings.Repeat("a", 129), "é"} {
		if SafeName(s) {
			t.Errorf("SafeName(%q) = true", s)
		}
	}
}
