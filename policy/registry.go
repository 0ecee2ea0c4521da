package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// KeyExternal runs the policy in another process (package policy/external): the spec
// "external:CMD" stands for external{"cmd":"CMD"}.
const KeyExternal = "external"

// Factory builds a policy from its JSON arguments; nil or empty arguments give the defaults.
type Factory func(args json.RawMessage) (Policy, error)

// Info describes a registered policy for listings.
type Info struct {
	Name     string
	Brief    string
	Defaults string // default arguments as JSON
}

// Registry maps policy keys to factories. It is a plain value: build it, pass it, merge it.
type Registry struct {
	factories map[string]Factory
	infos     []Info
	aliases   map[string]string // alias → spec
}

// Register adds a policy; registering a key twice is an error.
func (r *Registry) Register(info Info, f Factory) error {
	if r.factories == nil {
		r.factories = map[string]Factory{}
	}
	if _, dup := r.factories[info.Name]; dup {
		return fmt.Errorf("policy %q registered twice", info.Name)
	}
	r.factories[info.Name] = f
	r.infos = append(r.infos, info)
	return nil
}

// Alias makes name expand to spec (a key with arguments).
func (r *Registry) Alias(name, spec string) error {
	if r.aliases == nil {
		r.aliases = map[string]string{}
	}
	if _, dup := r.aliases[name]; dup {
		return fmt.Errorf("alias %q registered twice", name)
	}
	if _, dup := r.factories[name]; dup {
		return fmt.Errorf("alias %q shadows a policy key", name)
	}
	r.aliases[name] = spec
	return nil
}

// Infos lists the registered policies in registration order.
func (r *Registry) Infos() []Info { return slices.Clone(r.infos) }

// Aliases returns the aliases and their expansions, sorted by alias.
func (r *Registry) Aliases() [][2]string {
	var out [][2]string
	for a, s := range r.aliases {
		out = append(out, [2]string{a, s})
	}
	slices.SortFunc(out, func(x, y [2]string) int { return strings.Compare(x[0], y[0]) })
	return out
}

// Resolve expands an alias and splits a spec "key" or `key{"arg":value}` into key and arguments.
// "external:CMD" resolves to external{"cmd":"CMD"}, so the command may hold braces.
func (r *Registry) Resolve(spec string) (key string, args json.RawMessage, err error) {
	spec = strings.TrimSpace(spec)
	if exp, ok := r.aliases[spec]; ok {
		spec = exp
	}
	key, rest, hasArgs := strings.Cut(spec, "{")
	if hasArgs {
		args = json.RawMessage("{" + rest)
	}
	if cmd, ok := strings.CutPrefix(spec, KeyExternal+":"); ok {
		key, args = KeyExternal, cmdArgs(strings.TrimSpace(cmd))
	}
	if _, ok := r.factories[key]; !ok {
		return "", nil, fmt.Errorf("unknown policy %q (known: %s; run \"sharebench policies\")", key, strings.Join(r.keys(), ", "))
	}
	return key, args, nil
}

// New builds the policy named by spec: a key, a key with JSON arguments, or an alias.
func (r *Registry) New(spec string) (Policy, error) {
	key, args, err := r.Resolve(spec)
	if err != nil {
		return nil, err
	}
	p, err := r.factories[key](args)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", key, err)
	}
	return p, nil
}

func (r *Registry) keys() []string {
	var ks []string
	for _, i := range r.infos {
		ks = append(ks, i.Name)
	}
	return ks
}

// DecodeArgs fills dst (holding the defaults) from a policy's JSON arguments, rejecting unknown
// fields: what a factory does first.
func DecodeArgs(args json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("arguments %s: %w", args, err)
	}
	if dec.More() {
		return fmt.Errorf("arguments %s: trailing data", args)
	}
	return nil
}

// cmdArgs is {"cmd":cmd}, with the command's < > & kept as they are.
func cmdArgs(cmd string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]string{"cmd": cmd}); err != nil {
		panic(err)
	}
	return bytes.TrimSpace(b.Bytes())
}
