package sim

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/trace"
)

// TestJSONLBackground requires the background writer to write JSONLWriter's bytes, though the
// caller reuses the partners' slice at once, and to report a failed write at the flush.
func TestJSONLBackground(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []Kind{Submit, Start, Preempt, Finish, Demote, Promote}
	reasons := []string{"", "exclusive (yarn)", "waited 700.000s ≥ 1 × attained service", `a "quoted" \ reason`}
	var fg, bg bytes.Buffer
	fgObs, fgFlush := JSONLWriter(&fg)
	bgObs, bgFlush := JSONLBackground(&bg)
	partners := make([]trace.JobID, 0, 4)
	for i := range 5000 { // a few batches and a part of one
		ev := Event{T: time.Duration(rng.Int64N(1 << 50)), Kind: kinds[rng.IntN(len(kinds))], Job: trace.JobID(i),
			Reason: reasons[rng.IntN(len(reasons))], JCT: time.Duration(rng.Int64N(1 << 40))}
		if ev.Kind == Start {
			ev.GPUs, ev.SubBatch = []string{"0-1", "1-2"}[:1+rng.IntN(2)], 1+rng.IntN(64)
			partners = partners[:0]
			for range rng.IntN(3) {
				partners = append(partners, trace.JobID(rng.IntN(1000)))
			}
			ev.Partners = partners
		}
		fgObs(ev)
		bgObs(ev)
		for k := range partners {
			partners[k] = -1 // the policy's next use of its buffer
		}
	}
	if err := fgFlush(); err != nil {
		t.Fatal(err)
	}
	if err := bgFlush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fg.Bytes(), bg.Bytes()) {
		t.Fatalf("the background writer wrote %d bytes unlike JSONLWriter's %d", bg.Len(), fg.Len())
	}

	var empty bytes.Buffer
	_, flush := JSONLBackground(&empty)
	if err := flush(); err != nil || empty.Len() != 0 {
		t.Errorf("no events: error %v, %d bytes", err, empty.Len())
	}

	obs, flush := JSONLBackground(failWriter{})
	for i := range 5000 {
		obs(Event{Kind: Submit, Job: trace.JobID(i)})
	}
	if err := flush(); !errors.Is(err, errFull) {
		t.Errorf("flush after a failed write: %v, want %v", err, errFull)
	}
	if err := flush(); !errors.Is(err, errFull) {
		t.Errorf("second flush: %v, want %v", err, errFull)
	}
}

var errFull = errors.New("disk full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

// TestGPUNames requires a start event's GPU names as gpuName gives them, with no allocation for
// consecutive GPUs.
func TestGPUNames(t *testing.T) {
	e := &engine{cl: cluster.New(cluster.Shape{Nodes: 3, GPUsPerNode: 4, GPUMemBytes: cluster.GiB, MaxShare: 1})}
	for _, on := range [][]int{{0}, {2, 3}, {3, 4, 5, 6, 7, 8}, {11}, {1, 3}, {0, 4, 8}} {
		got := e.gpuNames(on)
		want := make([]string, len(on))
		for k, g := range on {
			want[k] = e.cl.ID(g).String()
		}
		if !slices.Equal(got, want) || cap(got) != len(got) {
			t.Errorf("gpuNames(%v) = %q (cap %d), want %q", on, got, cap(got), want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { e.gpuNames([]int{4, 5, 6, 7}) }); n != 0 {
		t.Errorf("consecutive GPUs: %v allocations, want 0", n)
	}
}
