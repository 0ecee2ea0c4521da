package profile

import (
	"math"
	"testing"
)

func TestEstimateMem(t *testing.T) {
	// resnet50 at 32: 1536 MiB + 25.56e6 × 12 B + 1.25 × 81.93 MiB × 32, rounded up to MiB.
	want := int64(math.Ceil(1536+25.56e6*12/(1<<20)+1.25*81.93*32)) << 20
	if got, ok := EstimateMem("resnet50", 32); !ok || got != want {
		t.Errorf("EstimateMem(resnet50, 32) = %d, %v; want %d", got, ok, want)
	}
	for _, key := range []string{"gavel:resnet18", "pollux:cifar10"} {
		got, _ := EstimateMem(key, 64)
		if want, _ := EstimateMem("resnet18-cifar10", 64); got != want {
			t.Errorf("%s = %d, want the CIFAR ResNet-18 estimate %d", key, got, want)
		}
	}
	if a, _ := EstimateMem("gavel:resnet50", 8); a == 0 {
		t.Error("a qualified key falls back to the plain architecture")
	}
	for _, bad := range []struct {
		model string
		b     int
	}{{"nosuchmodel", 8}, {"gavel:recommendation", 8}, {"resnet50", 0}} {
		if _, ok := EstimateMem(bad.model, bad.b); ok {
			t.Errorf("EstimateMem(%q, %d) should fail", bad.model, bad.b)
		}
	}
	// More samples never need less memory.
	for _, arch := range MemArchs() {
		prev := int64(0)
		for b := 1; b <= 256; b *= 2 {
			m, ok := EstimateMem(arch, b)
			if !ok || m < prev || m < MemOverheadMiB<<20 {
				t.Fatalf("%s at %d: %d (prev %d)", arch, b, m, prev)
			}
			prev = m
		}
	}
}

// TestEstimateMemVsAuthors compares the estimate with the SJF-BSBF authors' measured constants at
// their fixed batches (docs/paper.md §2.2). The estimate must be in the same ballpark: within a factor 1.6.
func TestEstimateMemVsAuthors(t *testing.T) {
	for _, model := range []string{"resnet18", "shufflenet_v2_x1_0", "vgg16", "vgg19", "bert", "gpt2", "dqn", "a2c"} {
		measured, batch, ok := AuthorsMem(model)
		if !ok {
			t.Fatalf("no authors' constant for %s", model)
		}
		est, ok := EstimateMem(model, batch)
		if !ok {
			t.Fatalf("no estimate for %s", model)
		}
		ratio := float64(est) / float64(measured)
		t.Logf("%-20s batch %3d: estimate %6d MiB, authors %6d MiB, ratio %.2f", model, batch, est>>20, measured>>20, ratio)
		if ratio < 1/1.6 || ratio > 1.6 {
			t.Errorf("%s: estimate %d MiB is not within a factor 1.6 of the authors' %d MiB", model, est>>20, measured>>20)
		}
	}
}
