package external_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/policy/external"
)

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		`python3 my.py`:                   {"python3", "my.py"},
		`  a   'b c'  "d \"e\" \$f" g\ h`: {"a", "b c", `d "e" $f`, "g h"},
		`x '' y`:                          {"x", "", "y"},
		`"{\"json\":1}"`:                  {`{"json":1}`},
	} {
		got, err := external.SplitCommand(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{`a "b`: "unterminated double quote", `a 'b`: "unterminated single quote", `a\`: "trailing backslash", "  ": "empty"} {
		if _, err := external.SplitCommand(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SplitCommand(%q): error %v, want %q", in, err, want)
		}
	}
}

// TestSpecs checks the spec forms: external:CMD keeps braces and < > & in the command, the long
// form takes arguments, and the registry lists the policy.
func TestSpecs(t *testing.T) {
	r := builtin.Registry()
	key, args, err := r.Resolve(`external: python3 p.py '{"w":[1,2]}' <x & y>`)
	if err != nil || key != policy.KeyExternal || string(args) != `{"cmd":"python3 p.py '{\"w\":[1,2]}' <x & y>"}` {
		t.Errorf("Resolve: %q %s %v", key, args, err)
	}
	a, ok := external.Parse(`external{"cmd":"python3 p.py","name":"mine","timeout_s":5}`)
	if !ok || a.Cmd != "python3 p.py" || a.Name != "mine" || a.TimeoutS != 5 || a.StartTimeoutS != external.Defaults.StartTimeoutS {
		t.Errorf("Parse: %+v %v", a, ok)
	}
	if _, ok := external.Parse("sjf"); ok {
		t.Error("Parse accepted sjf")
	}
	for spec, want := range map[string]string{
		`external{}`:                               "no command",
		`external{"cmd":"x","timeout_s":-1}`:       "timeout_s: want seconds ≥ 0",
		`external{"fds":[3]}`:                      "want [read, write]",
		`external{"cmd":"x","bogus":1}`:            `unknown field "bogus"`,
		`external{"cmd":"x","start_timeout_s":-2}`: "start_timeout_s",
	} {
		if _, err := r.New(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%s): error %v, want %q", spec, err, want)
		}
	}
	if !slices.ContainsFunc(r.Infos(), func(i policy.Info) bool {
		return i.Name == policy.KeyExternal && strings.Contains(i.Brief, "external:CMD") && strings.Contains(i.Brief, "docs/external-policy.md")
	}) {
		t.Error("the registry does not list external with its usage")
	}
}
