package runner

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// progress reports cells done and left with an ETA: a line rewritten in place on a terminal
// (w != nil), or one log line per finished cell.
type progress struct {
	mu                            sync.Mutex
	w                             io.Writer
	log                           *slog.Logger
	total, finished, ran, skipped int
	ok, infeasible, failed        int
	began                         time.Time
	running                       []string
}

func newProgress(w io.Writer, log *slog.Logger, total int) *progress {
	return &progress{w: w, log: log, total: total, began: time.Now()}
}

func (p *progress) skip() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished++
	p.skipped++
}

func (p *progress) start(c Cell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = append(p.running, c.Label)
	if p.w == nil {
		p.log.Info("cell start", "cell", c.Label, "index", c.Index, "kind", c.Kind)
	}
	p.draw()
}

func (p *progress) done(r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished++
	p.ran++
	switch r.Status {
	case StatusOK:
		p.ok++
	case StatusFailed:
		p.failed++
	default:
		p.infeasible++
	}
	for i, l := range p.running {
		if l == r.Cell.Label {
			p.running = append(p.running[:i], p.running[i+1:]...)
			break
		}
	}
	if p.w == nil {
		attrs := []any{"cell", r.Cell.Label, "status", r.Status, "done", p.finished, "left", p.total - p.finished, "eta", p.eta().Round(time.Second).String()}
		if r.Reason != "" {
			attrs = append(attrs, "reason", r.Reason)
		}
		if r.Status == StatusFailed {
			p.log.Warn("cell done", attrs...)
		} else {
			p.log.Info("cell done", attrs...)
		}
		return
	}
	p.draw()
}

// eta extrapolates the mean time of the cells run so far to the cells left.
func (p *progress) eta() time.Duration {
	if p.ran == 0 {
		return 0
	}
	per := time.Since(p.began) / time.Duration(p.ran)
	return per * time.Duration(p.total-p.finished)
}

func (p *progress) draw() {
	if p.w == nil {
		return
	}
	eta := "?"
	if p.ran > 0 {
		eta = p.eta().Round(time.Second).String()
	}
	line := fmt.Sprintf("[%d/%d] ok %d, infeasible %d, failed %d, left %d, ETA %s  %s",
		p.finished, p.total, p.ok, p.infeasible, p.failed, p.total-p.finished, eta, strings.Join(p.running, ", "))
	if len(line) > 160 {
		line = line[:157] + "..."
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil {
		p.running = nil
		p.draw()
		fmt.Fprintln(p.w)
	}
}
