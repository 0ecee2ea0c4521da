package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/sharebench/sharebench/internal/clip"
)

// Load decodes a profile from r. name labels errors (usually the file name); syntax and type
// errors carry name:line:column.
func Load(r io.Reader, name string) (*Table, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("profile: %s: %w", name, err)
	}
	return decode(data, name)
}

// decode is Load on the profile's bytes.
func decode(data []byte, name string) (*Table, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("profile: %s: empty file", name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		line, col := position(data, dec, err)
		return nil, fmt.Errorf("profile: %s:%d:%d: %w", name, line, col, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("profile: %s: trailing data after the JSON object", name)
	}
	if t.Format != FormatName {
		return nil, fmt.Errorf("profile: %s: format %s is not %q", name, clip.Quote(t.Format), FormatName)
	}
	if t.Version < 1 || t.Version > Version {
		return nil, fmt.Errorf("profile: %s: version %d not supported (this build reads 1..%d)", name, t.Version, Version)
	}
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("profile: %s: %w", name, err)
	}
	return &t, nil
}

// LoadFile reads the profile at path.
func LoadFile(path string) (*Table, error) {
	data, err := os.ReadFile(path) // one buffer of the file's size
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return decode(data, filepath.Base(path))
}

// position returns the line and column of a JSON decoding error.
func position(data []byte, dec *json.Decoder, err error) (line, col int) {
	off := dec.InputOffset()
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(data))
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = int(off) - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// Write encodes t in canonical form: normalized order, two-space indentation, trailing newline.
// Equal tables give identical bytes. It leaves t itself untouched, so it is safe while other
// goroutines read t.
func (t *Table) Write(w io.Writer) error {
	c := *t
	c.Models = slices.Clone(t.Models)
	for i := range c.Models {
		c.Models[i].Configs = slices.Clone(c.Models[i].Configs)
	}
	c.Pairs = slices.Clone(t.Pairs)
	if err := c.Normalize(); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteFile writes t to path atomically (a temporary file in the same directory, then rename).
func (t *Table) WriteFile(path string) error {
	var buf bytes.Buffer
	if err := t.Write(&buf); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes())
}

func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp makes 0600; a profile is a shareable data file
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("profile: %w", err)
	}
	return nil
}
