package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Engine names, as users spell them in --backend.
const (
	NameSlurm      = "slurm"
	NameKubernetes = "kubernetes"
)

// Duration is a time.Duration written as a Go duration string ("10s", "2m30s") in YAML and
// JSON; a bare YAML number means seconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration string such as "90s"; a bare number means seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		*d = Duration(time.Duration(f * float64(time.Second)))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 30s, 2m)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// SafeName reports whether s may reach a command line, a file name or a job name: 1–128
// letters, digits, '.', '_' and '-', starting with a letter or digit.
func SafeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		alnum := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._-", rune(ch))) {
			return false
		}
	}
	return true
}

// ValueOK reports whether s may be an engine option value (sbatch --partition=…, kubectl
// --context=…): printable ASCII without spaces, not starting with '-'.
func ValueOK(s string) bool {
	if s == "" || len(s) > 256 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// ShellQuote quotes s for a POSIX shell: single quotes, with embedded single quotes closed,
// escaped and reopened. Everything that reaches a generated script goes through it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ActiveState reports whether an engine's task state is not final: Slurm job states
// (PENDING, RUNNING, COMPLETING, ...) and pod phases (Pending, Running); "" counts as active
// (not known yet).
func ActiveState(state string) bool {
	switch strings.ToUpper(state) {
	case "", "SUBMITTED", "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
		"SIGNALING", "STAGE_OUT", "STOPPED", "REQUEUE_HOLD", "REQUEUE_FED", "SPECIAL_EXIT":
		return true
	}
	return false
}

// run runs an engine command and returns its standard output. Errors name the engine and the
// command and carry its standard error ("slurm: sbatch: exit status 1: sbatch: error: …"). When
// ctx ends while the command runs, the error wraps ctx's cause, so callers see the
// cancellation rather than the killed command.
func run(ctx context.Context, engine, name string, args []string, stdin []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := runCmd(cmd, engine)
	if err != nil && ctx.Err() != nil {
		return out, fmt.Errorf("%s: %s: %w", engine, filepath.Base(name), context.Cause(ctx))
	}
	return out, err
}

// cleanupTimeout bounds a cleanup command: kubectl delete, scancel.
const cleanupTimeout = 30 * time.Second

// runCleanup runs a command that undoes what an engine started (kubectl delete, scancel),
// usually after the caller's context was cancelled: with a fresh context bounded by limit, in a
// process group of its own (detach), so that a second Ctrl-C cannot kill it half-way, and the
// whole group killed when the limit passes.
func runCleanup(limit time.Duration, engine, name string, args []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	detach(cmd)
	out, err := runCmd(cmd, engine)
	if err != nil && ctx.Err() != nil {
		return out, fmt.Errorf("%s: %s: stopped after %s without an answer", engine, filepath.Base(name), limit)
	}
	return out, err
}

// runCmd runs cmd and returns its standard output, or an error that names the engine and the
// command and carries its standard error.
func runCmd(cmd *exec.Cmd, engine string) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return out.Bytes(), nil
	}
	name := filepath.Base(cmd.Args[0])
	msg := strings.TrimSpace(errb.String())
	if len(msg) > 2000 {
		msg = msg[len(msg)-2000:]
	}
	if msg != "" {
		return out.Bytes(), fmt.Errorf("%s: %s: %w: %s", engine, name, err, msg)
	}
	return out.Bytes(), fmt.Errorf("%s: %s: %w", engine, name, err)
}

// TailLines returns the last n lines of b.
func TailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pollIntervals returns the first and the largest polling interval (defaults 5s and 60s).
func pollIntervals(first, most Duration) (time.Duration, time.Duration) {
	lo, hi := first.D(), most.D()
	if lo <= 0 {
		lo = 5 * time.Second
	}
	if hi <= 0 {
		hi = 60 * time.Second
	}
	return lo, max(hi, lo)
}

var errNoIndices = errors.New("slurm: sbatch: no array indices")
