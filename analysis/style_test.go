package analysis

import (
	"image/color"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// knownNames returns the names with a fixed style, in display order.
func knownNames() []string {
	var out []string
	for _, k := range knownSeries {
		out = append(out, k.name)
	}
	return out
}

// lab converts an sRGB colour to CIELAB (D65), for perceptual colour distances.
func lab(c color.NRGBA) [3]float64 {
	lin := func(v uint8) float64 {
		x := float64(v) / 255
		if x <= 0.04045 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	r, g, b := lin(c.R), lin(c.G), lin(c.B)
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

func deltaE(a, b color.NRGBA) float64 {
	la, lb := lab(a), lab(b)
	return math.Sqrt((la[0]-lb[0])*(la[0]-lb[0]) + (la[1]-lb[1])*(la[1]-lb[1]) + (la[2]-lb[2])*(la[2]-lb[2]))
}

func TestKnownSeriesStyles(t *testing.T) {
	t.Parallel()
	sty := styles(knownNames())
	type look struct {
		c     color.NRGBA
		hatch int
	}
	type line struct {
		c      color.NRGBA
		dashes string
		marker int
	}
	bars, lines := map[look]string{}, map[line]string{}
	for _, n := range knownNames() {
		st := sty[n]
		if !cmp.Equal(st, knownSeries[knownRank(n)].style) {
			t.Errorf("%s: style depends on the figure", n)
		}
		if prev, dup := bars[look{st.Color, st.Hatch}]; dup {
			t.Errorf("%s and %s have the same bar fill", prev, n)
		}
		bars[look{st.Color, st.Hatch}] = n
		l := line{st.Color, cmp.Diff(nil, st.Dashes), st.Marker}
		if prev, dup := lines[l]; dup {
			t.Errorf("%s and %s have the same line style", prev, n)
		}
		lines[l] = n
	}
	// The base policies have colours far apart (ΔE76 ≥ 25); in particular tiresias and
	// sjf-bsbf are no longer two oranges.
	base := []string{PolicyFIFO, PolicySJF, PolicyTiresias, "tiresias-testbed", PolicySJFFFS, PolicySJFBSBF}
	for i, a := range base {
		for _, b := range base[i+1:] {
			if d := deltaE(sty[a].Color, sty[b].Color); d < 25 {
				t.Errorf("%s and %s: colour distance ΔE = %.1f < 25", a, b, d)
			}
		}
	}
	// Variants share the colour of the policy they derive from.
	for v, p := range map[string]string{"tiresias-entry-order": PolicyTiresias, "tiresias-authors": "tiresias-testbed",
		"sjf-bsbf-fixed": PolicySJFBSBF, "theorem-1": PolicySJFBSBF, "always-share": PolicySJFFFS, "never-share": PolicySJF} {
		if sty[v].Color != sty[p].Color || sty[v].Hatch == sty[p].Hatch {
			t.Errorf("%s: want %s's colour with another hatch, got %+v vs %+v", v, p, sty[v], sty[p])
		}
	}
	// No known colour is orange next to sjf-bsbf's vermilion.
	for _, n := range knownNames() {
		if sty[n].Color == oiOrange {
			t.Errorf("%s is orange, too close to sjf-bsbf's vermilion", n)
		}
	}
}

func TestUnknownSeriesStyles(t *testing.T) {
	t.Parallel()
	names := []string{"zeta", "sjf-bsbf-preempt", "alpha", "sjf-bsbf{\"mps\":true}", PolicySJFBSBF, "beta", "gamma", PolicyFIFO}
	a := styles(names)
	rev := slices.Clone(names)
	slices.Reverse(rev)
	if diff := cmp.Diff(a, styles(rev)); diff != "" {
		t.Errorf("styles depend on the order of the names (-a +b):\n%s", diff)
	}
	type look struct {
		c     color.NRGBA
		hatch int
	}
	seen := map[look]string{}
	for _, n := range names {
		l := look{a[n].Color, a[n].Hatch}
		if prev, dup := seen[l]; dup {
			t.Errorf("%s and %s look alike: %+v", prev, n, l)
		}
		seen[l] = n
	}
	for _, n := range []string{"sjf-bsbf-preempt", "sjf-bsbf{\"mps\":true}"} {
		if a[n].Color != oiVermilion || a[n].Hatch == 0 {
			t.Errorf("%s: want sjf-bsbf's colour with a hatch, got %+v", n, a[n])
		}
	}
	if !cmp.Equal(a[PolicySJFBSBF], knownSeries[knownRank(PolicySJFBSBF)].style) {
		t.Error("a known policy lost its fixed style next to unknown names")
	}
	// Up to 32 unknown names (8 colours × 4 fills) never collide.
	var many []string
	for i := range 32 {
		many = append(many, string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	seen = map[look]string{}
	for n, st := range styles(many) {
		if prev, dup := seen[look{st.Color, st.Hatch}]; dup {
			t.Errorf("%s and %s look alike", prev, n)
		}
		seen[look{st.Color, st.Hatch}] = n
	}
}
