package profile

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/internal/clip"
)

// A ModelMap maps the model names and batches of a trace onto the configurations of a profile,
// e.g. the authors' "vgg19" at batch 16 onto Gavel's "ResNet-50" at batch 32. Jobs whose model
// has no rule keep their name and batch.
type ModelMap struct {
	Rules []MapRule
}

// MapRule is one line of a model-map file.
type MapRule struct {
	TraceModel string
	TraceBatch int // 0 matches any batch
	Model      string
	Batch      int // 0 keeps the trace's batch (or the profile's default batch when the trace has none)
	Note       string
	Line       int
}

// mapHeader is the header of a model-map CSV file.
const mapHeader = "trace_model,trace_batch,profile_model,profile_batch,note"

// LoadModelMap reads a model-map CSV: the header trace_model,trace_batch,profile_model,
// profile_batch,note, then one rule per line. "*" in trace_batch matches any batch; "*" in
// profile_batch keeps the job's batch. Lines starting with # are comments. The first matching
// rule wins, and a rule with a concrete trace_batch is tried before a wildcard one.
func LoadModelMap(r io.Reader, name string) (*ModelMap, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	var m ModelMap
	header := true
	seen := map[[2]string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("model map: %s: %w", name, err)
		}
		if header {
			if strings.Join(rec, ",") != mapHeader {
				return nil, fmt.Errorf("model map: %s:%d: header must be %q", name, line, mapHeader)
			}
			header = false
			continue
		}
		if len(rec) != 5 {
			return nil, fmt.Errorf("model map: %s:%d: want 5 fields, got %d", name, line, len(rec))
		}
		rule := MapRule{TraceModel: strings.TrimSpace(rec[0]), Model: strings.TrimSpace(rec[2]), Note: rec[4], Line: line}
		if rule.TraceModel == "" || rule.Model == "" {
			return nil, fmt.Errorf("model map: %s:%d: empty model name", name, line)
		}
		if rule.TraceBatch, err = mapBatch(rec[1]); err != nil {
			return nil, fmt.Errorf("model map: %s:%d: trace_batch: %w", name, line, err)
		}
		if rule.Batch, err = mapBatch(rec[3]); err != nil {
			return nil, fmt.Errorf("model map: %s:%d: profile_batch: %w", name, line, err)
		}
		key := [2]string{rule.TraceModel, rec[1]}
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("model map: %s:%d: duplicate rule for %s batch %s (first on line %d)", name, line, rec[0], rec[1], prev)
		}
		seen[key] = line
		m.Rules = append(m.Rules, rule)
	}
	if header {
		return nil, fmt.Errorf("model map: %s: empty file", name)
	}
	return &m, nil
}

// LoadModelMapFile reads the model map at path.
func LoadModelMapFile(path string) (*ModelMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model map: %w", err)
	}
	defer f.Close()
	return LoadModelMap(f, filepath.Base(path))
}

func mapBatch(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive integer or *, got %s", clip.Quote(s))
	}
	return n, nil
}

// Resolve maps a trace model and batch to a profile model and batch. A nil map is the identity.
// Batch 0 (the trace gave none) stays 0 unless a rule sets it.
func (m *ModelMap) Resolve(model string, batch int) (string, int) {
	if m == nil {
		return model, batch
	}
	var wild *MapRule
	for i := range m.Rules {
		r := &m.Rules[i]
		if r.TraceModel != model {
			continue
		}
		if r.TraceBatch == batch && batch != 0 {
			return apply(r, batch)
		}
		if r.TraceBatch == 0 && wild == nil {
			wild = r
		}
	}
	if wild != nil {
		return apply(wild, batch)
	}
	return model, batch
}

func apply(r *MapRule, batch int) (string, int) {
	if r.Batch != 0 {
		return r.Model, r.Batch
	}
	return r.Model, batch
}
