package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Upstream provenance of the public data sets the importers read. The values come from the data
// READMEs under shared/data/profiles/.

// GavelProvenance describes Gavel's throughput files (the importer sets the path per file).
func GavelProvenance() Provenance {
	return Provenance{
		Origin:  "github.com/stanford-futuredata/gavel (Narayanan et al., OSDI'20)",
		Path:    "scheduler/simulation_throughputs.json",
		Commit:  "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c",
		Licence: "MIT",
	}
}

// BloxProvenance describes Blox's co-location table.
func BloxProvenance() Provenance {
	return Provenance{
		Origin:  "github.com/msr-fiddle/blox (Agarwal et al., EuroSys'24)",
		Path:    "blox_exp/colocate_info/norm_speed.csv",
		Commit:  "cc1f86228332626316b80847bf09229e69e0c3d9",
		Licence: "MIT",
	}
}

// PolluxProvenance describes the Pollux simulator's step-time traces.
func PolluxProvenance() Provenance {
	return Provenance{
		Origin:  "github.com/petuum/adaptdl, branch osdi21-artifact (Qiao et al., OSDI'21)",
		Path:    "simulator/traces/<model>/{placements,scalability}.csv",
		Commit:  "c793c7089bd307462686339d29707925c461f9a9",
		Licence: "Apache-2.0 (adaptdl LICENSE on master; the osdi21-artifact branch carries no LICENSE file)",
	}
}

// AuthorsProvenance describes the SJF-BSBF authors' tables, which were never published.
func AuthorsProvenance() Provenance {
	return Provenance{
		Origin:  "github.com/Lai-JX/Scheduler (SJF-BSBF authors; tables git-ignored, never published)",
		Path:    "trace-data/ratio.json, trace-data/itertime.json",
		Licence: "none stated (the repository has no licence file)",
	}
}

// posError is an error at a position of an input file.
func posError(name string, data []byte, off int64, format string, args ...any) error {
	line, col := lineCol(data, off)
	return fmt.Errorf("%s:%d:%d: %s", name, line, col, fmt.Sprintf(format, args...))
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// jnode is a decoded JSON value that remembers where it starts and keeps object keys in file
// order, so that importers can report semantic errors with line and column.
type jnode struct {
	off   int64
	kind  byte // '{' object, '[' array, 'n' number, 's' string, 'b' bool, '0' null
	keys  []string
	kOffs []int64
	vals  []*jnode
	elems []*jnode
	num   float64
	str   string
}

// parseJSON decodes data into a jnode tree. Errors carry name:line:column.
func parseJSON(data []byte, name string) (*jnode, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file", name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	p := &jparser{data: data, dec: dec, name: name}
	root, err := p.value()
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, posError(name, data, p.start(), "trailing data after the JSON value")
	}
	return root, nil
}

type jparser struct {
	data []byte
	dec  *json.Decoder
	name string
}

// start returns the offset of the next token: the decoder's offset past whitespace and separators.
func (p *jparser) start() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *jparser) token() (json.Token, int64, error) {
	off := p.start()
	tok, err := p.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		line, col := position(p.data, p.dec, err)
		return nil, off, fmt.Errorf("%s:%d:%d: %w", p.name, line, col, err)
	}
	return tok, off, nil
}

func (p *jparser) value() (*jnode, error) {
	tok, off, err := p.token()
	if err != nil {
		return nil, err
	}
	return p.valueFrom(tok, off)
}

func (p *jparser) valueFrom(tok json.Token, off int64) (*jnode, error) {
	n := &jnode{off: off}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = '{'
			seen := map[string]int64{}
			for {
				tok, koff, err := p.token()
				if err != nil {
					return nil, err
				}
				if d, ok := tok.(json.Delim); ok && d == '}' {
					return n, nil
				}
				key, ok := tok.(string)
				if !ok {
					return nil, posError(p.name, p.data, koff, "object key expected")
				}
				if prev, dup := seen[key]; dup {
					l, _ := lineCol(p.data, prev)
					return nil, posError(p.name, p.data, koff, "duplicate key %q (first on line %d)", key, l)
				}
				seen[key] = koff
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.kOffs = append(n.kOffs, koff)
				n.vals = append(n.vals, v)
			}
		case '[':
			n.kind = '['
			for {
				tok, eoff, err := p.token()
				if err != nil {
					return nil, err
				}
				if d, ok := tok.(json.Delim); ok && d == ']' {
					return n, nil
				}
				v, err := p.valueFrom(tok, eoff)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
		default:
			return nil, posError(p.name, p.data, off, "unexpected %q", string(t))
		}
	case float64:
		n.kind, n.num = 'n', t
	case string:
		n.kind, n.str = 's', t
	case bool:
		n.kind = 'b'
	case nil:
		n.kind = '0'
	default:
		return nil, posError(p.name, p.data, off, "unexpected token %v", tok)
	}
	return n, nil
}

// kindName names a jnode kind for error messages.
func kindName(k byte) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "a number"
	case 's':
		return "a string"
	case 'b':
		return "a boolean"
	default:
		return "null"
	}
}

// finitePositive reports whether v is a finite number > 0.
func finitePositive(v float64) bool {
	return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v)
}

// roundSig rounds v to 12 significant digits, so that values computed from the same inputs in a
// different order print the same and tiny floating-point noise stays out of the profiles.
func roundSig(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// gpuCounts returns the sorted keys of a GPUMap, formatted "1, 2, 4".
func gpuCounts(m GPUMap) string {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	ss := make([]string, len(ks))
	for i, k := range ks {
		ss[i] = strconv.Itoa(k)
	}
	return strings.Join(ss, ", ")
}

// listNote joins up to max items, then says how many more there are.
func listNote(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", len(items)-max)
}

// setEstimatedMem fills MemBytes of every config of t that has none from EstimateMem, using
// memKey(model) as the architecture key, and returns a note describing what it did. Estimates
// above the GPU's memory are dropped (the data prove such configurations ran).
func setEstimatedMem(t *Table, memKey func(model string) string) []string {
	var unknown, tooBig []string
	estimated := 0
	for i := range t.Models {
		m := &t.Models[i]
		key := memKey(m.Name)
		if _, ok := MemModelFor(key); !ok {
			unknown = append(unknown, m.Name)
			continue
		}
		for j := range m.Configs {
			s := &m.Configs[j]
			if s.MemBytes != 0 {
				continue
			}
			b, _ := EstimateMem(key, s.SubBatch)
			if t.GPUMemBytes > 0 && b > t.GPUMemBytes {
				tooBig = append(tooBig, Config{m.Name, s.Batch, s.SubBatch}.String())
				continue
			}
			s.MemBytes, s.MemEstimated = b, true
			estimated++
		}
	}
	var notes []string
	if estimated > 0 {
		notes = append(notes, fmt.Sprintf("memory is not in the data: mem_bytes of %d configurations is the estimate of profile.EstimateMem "+
			"(%d MiB fixed + parameters × state bytes + %.2f × activations per sample × sub-batch; docs/profile-import.md) and marked mem_estimated",
			estimated, MemOverheadMiB, MemActFactor))
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		notes = append(notes, "no memory estimate for "+strings.Join(unknown, ", ")+": mem_bytes is 0 (unknown)")
	}
	if len(tooBig) > 0 {
		notes = append(notes, "the memory estimate exceeds gpu_mem_bytes for "+listNote(tooBig, 8)+
			" although the data show them running: their mem_bytes is left 0 (unknown)")
	}
	return notes
}

// defaultBatchOf returns the middle (lower median) of the batches configured for m.
func defaultBatchOf(m *Model) int {
	var bs []int
	for _, s := range m.Configs {
		if !slices.Contains(bs, s.Batch) {
			bs = append(bs, s.Batch)
		}
	}
	slices.Sort(bs)
	if len(bs) == 0 {
		return 0
	}
	return bs[(len(bs)-1)/2]
}
