package external

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sharebench/sharebench/policy"
)

// Version is the protocol version this package speaks.
const Version = 1

// Args are the arguments of an external policy; the spec "external:CMD" is
// external{"cmd":"CMD"}.
type Args struct {
	// Cmd is the policy's command line, split into words like a POSIX shell splits plain words,
	// quotes and backslashes (no variables, globs or pipes), and run in the current directory.
	Cmd string `json:"cmd,omitempty"`
	// FDs speaks the protocol on two file descriptors inherited from the parent, [read, write],
	// instead of starting Cmd: for drivers that start sharebench themselves (the Python
	// client's environment loop).
	FDs []int `json:"fds,omitempty"`
	// TimeoutS bounds the wait for each plan, in seconds; 0 waits forever.
	TimeoutS float64 `json:"timeout_s"`
	// StartTimeoutS bounds the wait for the reply to the hello (interpreter start-up, loading a
	// model), in seconds; 0 waits forever.
	StartTimeoutS float64 `json:"start_timeout_s"`
	// Name labels the policy in summaries, tables and figures instead of its spec.
	Name string `json:"name,omitempty"`
	// Transcript names a file that receives every line exchanged, prefixed "> " (to the
	// policy) or "< " (from it).
	Transcript string `json:"transcript,omitempty"`
}

// Defaults are the default arguments.
var Defaults = Args{TimeoutS: 60, StartTimeoutS: 60}

// Register adds the policy key "external" to r: the spec "external:CMD" runs CMD.
func Register(r *policy.Registry) error {
	d, err := json.Marshal(Defaults)
	if err != nil {
		return err
	}
	return r.Register(policy.Info{
		Name:     policy.KeyExternal,
		Brief:    `your own scheduler in another process: external:CMD runs CMD, which speaks the JSON-lines protocol of docs/external-policy.md (Python client in clients/python)`,
		Defaults: string(d),
	}, func(raw json.RawMessage) (policy.Policy, error) {
		a, err := ParseArgs(raw)
		if err != nil {
			return nil, err
		}
		return New(a)
	})
}

// ParseArgs reads the JSON arguments over the defaults, rejecting unknown fields.
func ParseArgs(raw json.RawMessage) (Args, error) {
	a := Defaults
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return a, fmt.Errorf("arguments %s: %w", raw, err)
		}
		if dec.More() {
			return a, fmt.Errorf("arguments %s: trailing data", raw)
		}
	}
	switch {
	case a.Cmd == "" && len(a.FDs) == 0:
		return a, errors.New("no command: give external:CMD or external{\"cmd\":\"CMD\"}")
	case a.Cmd != "" && len(a.FDs) > 0:
		return a, errors.New("give cmd or fds, not both")
	case len(a.FDs) > 0 && (len(a.FDs) != 2 || a.FDs[0] < 0 || a.FDs[1] < 0):
		return a, fmt.Errorf("fds: want [read, write] file descriptors, got %v", a.FDs)
	case !validSeconds(a.TimeoutS):
		return a, fmt.Errorf("timeout_s: want seconds ≥ 0, got %v", a.TimeoutS)
	case !validSeconds(a.StartTimeoutS):
		return a, fmt.Errorf("start_timeout_s: want seconds ≥ 0, got %v", a.StartTimeoutS)
	}
	if a.Cmd != "" {
		if _, err := SplitCommand(a.Cmd); err != nil {
			return a, err
		}
	}
	return a, nil
}

func validSeconds(s float64) bool { return s >= 0 && !math.IsInf(s, 1) }

func duration(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// Parse returns the arguments of an external policy spec, and false for any other spec.
func Parse(spec string) (Args, bool) {
	r := &policy.Registry{}
	if err := Register(r); err != nil {
		return Args{}, false
	}
	key, raw, err := r.Resolve(spec)
	if err != nil || key != policy.KeyExternal {
		return Args{}, false
	}
	a, err := ParseArgs(raw)
	return a, err == nil
}

// SplitCommand splits a command line into words: blanks separate words, single quotes keep
// everything up to the next single quote, double quotes keep everything but \" \\ \$ \`
// escapes, and a backslash outside quotes keeps the next character.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("command %q: unterminated single quote", s)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("command %q: unterminated double quote", s)
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("command %q: trailing backslash", s)
			}
			i++
			w.WriteByte(s[i])
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("command %q: empty", s)
	}
	return words, nil
}
