package analysis

import (
	"cmp"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Policy names with a fixed place and colour in every table and figure.
const (
	PolicyFIFO     = "fifo"
	PolicySJF      = "sjf"
	PolicyTiresias = "tiresias"
	PolicySJFFFS   = "sjf-ffs"
	PolicySJFBSBF  = "sjf-bsbf"
)

// The Okabe–Ito palette (Okabe and Ito, "Color Universal Design", 2008): its colours stay
// distinguishable under the common forms of colour-vision deficiency. Black is replaced by a
// dark grey so that black error bars stay visible on it.
var (
	oiGrey      = color.NRGBA{0x5a, 0x5a, 0x5a, 0xff}
	oiOrange    = color.NRGBA{0xe6, 0x9f, 0x00, 0xff}
	oiSkyBlue   = color.NRGBA{0x56, 0xb4, 0xe9, 0xff}
	oiGreen     = color.NRGBA{0x00, 0x9e, 0x73, 0xff}
	oiYellow    = color.NRGBA{0xf0, 0xe4, 0x42, 0xff}
	oiBlue      = color.NRGBA{0x00, 0x72, 0xb2, 0xff}
	oiVermilion = color.NRGBA{0xd5, 0x5e, 0x00, 0xff}
	oiPurple    = color.NRGBA{0xcc, 0x79, 0xa7, 0xff}
)

// seriesStyle is how one series looks: its colour, its bar fill pattern (hatch), its line
// dash pattern and its marker. Colour identifies a policy family; hatch, dashes and marker
// tell the members of a family apart, also in grey print.
type seriesStyle struct {
	Color  color.NRGBA
	Hatch  int // 0 solid fill; 1 "///", 2 "\\\", 3 crossed (see hatchFill)
	Dashes []vg.Length
	Marker int // see markerShape
}

// knownSeries lists the policies and variants the harness uses, in display order, with their
// fixed styles: the same name looks the same in every figure. Variants share the colour of
// the policy they derive from (sjf-bsbf-fixed is sjf-bsbf without sub-batching, always-share is
// sjf-ffs, theorem-1 is sjf-bsbf's share rule) and differ from it in hatch, dashes and marker;
// never-share, SJF order without preemption or sharing, takes sjf's colour, so that it stands
// apart from the sharing policies it is compared with. Orange is kept away from sjf-bsbf's vermilion:
// the two are hard to tell apart side by side.
var knownSeries = []struct {
	name  string
	style seriesStyle
}{
	{PolicyFIFO, seriesStyle{oiGrey, 0, dashPattern(3), 0}},
	{PolicySJF, seriesStyle{oiPurple, 0, dashPattern(2), 1}},
	{PolicyTiresias, seriesStyle{oiBlue, 0, dashPattern(1), 2}},
	{"tiresias-entry-order", seriesStyle{oiBlue, 1, dashPattern(5), 4}},
	{"tiresias-testbed", seriesStyle{oiSkyBlue, 0, dashPattern(4), 3}},
	{"tiresias-authors", seriesStyle{oiSkyBlue, 2, dashPattern(2), 10}},
	{PolicySJFFFS, seriesStyle{oiGreen, 0, dashPattern(4), 5}},
	{PolicySJFBSBF, seriesStyle{oiVermilion, 0, nil, 0}},
	{"sjf-bsbf-fixed", seriesStyle{oiVermilion, 1, dashPattern(1), 7}},
	{"never-share", seriesStyle{oiPurple, 2, dashPattern(2), 8}},
	{"always-share", seriesStyle{oiGreen, 1, dashPattern(4), 6}},
	{"theorem-1", seriesStyle{oiVermilion, 3, nil, 9}},
}

// knownRank returns the display rank of a known series name, or len(knownSeries).
func knownRank(name string) int {
	for i, k := range knownSeries {
		if k.name == name {
			return i
		}
	}
	return len(knownSeries)
}

// compareSeries orders series names: the known policies and variants in their fixed order,
// then the others alphabetically.
func compareSeries(a, b string) int {
	return cmp.Or(cmp.Compare(knownRank(a), knownRank(b)), cmp.Compare(a, b))
}

// SortSeries sorts series names into display order in place: fifo, sjf, tiresias,
// tiresias-entry-order, tiresias-testbed, tiresias-authors, sjf-ffs, sjf-bsbf, sjf-bsbf-fixed,
// never-share, always-share, theorem-1, then the others alphabetically.
func SortSeries(names []string) { slices.SortFunc(names, compareSeries) }

// family returns the colour of the known policy that name derives from ("sjf-bsbf-preempt"
// and "sjf-bsbf{...}" from sjf-bsbf: the longest known name followed by '-' or '{'), and
// whether there is one.
func family(name string) (color.NRGBA, bool) {
	best := -1
	for i, k := range knownSeries {
		if strings.HasPrefix(name, k.name) && len(name) > len(k.name) && strings.ContainsRune("-{", rune(name[len(k.name)])) {
			if best < 0 || len(k.name) > len(knownSeries[best].name) {
				best = i
			}
		}
	}
	if best < 0 {
		return color.NRGBA{}, false
	}
	return knownSeries[best].style.Color, true
}

// fallbackColors are the colours for series of no known family, in order.
var fallbackColors = []color.NRGBA{{0, 0, 0, 0xff}, oiBlue, oiGreen, oiPurple, oiSkyBlue, oiYellow, oiOrange, oiVermilion}

// styles assigns styles to the series names of one figure. Known names get their fixed
// style. Every other name (in display order) gets the colour of its family, or the next
// fallback colour, and the first hatch/dash/marker combination that no other series of the
// figure has with that colour, so that two series of one figure never look alike and the
// same set of names always gets the same styles.
func styles(names []string) map[string]seriesStyle {
	out := make(map[string]seriesStyle, len(names))
	sorted := slices.Clone(names)
	SortSeries(sorted)
	type look struct {
		c     color.NRGBA
		hatch int
	}
	used := map[look]bool{}
	for _, n := range sorted {
		if r := knownRank(n); r < len(knownSeries) {
			st := knownSeries[r].style
			out[n] = st
			used[look{st.Color, st.Hatch}] = true
		}
	}
	// Unknown names: the colour of their family with a hatch, else the fallback colours
	// (starting at a different one for each), solid before hatched; the first combination
	// no other series of the figure has.
	for i, n := range unknownSeries(sorted) {
		var candidates []look
		if c, ok := family(n); ok {
			for _, h := range []int{1, 2, 3, 0} {
				candidates = append(candidates, look{c, h})
			}
		}
		for _, h := range []int{0, 1, 2, 3} {
			for j := range fallbackColors {
				candidates = append(candidates, look{fallbackColors[(i+j)%len(fallbackColors)], h})
			}
		}
		l := candidates[len(candidates)-1]
		for _, c := range candidates {
			if !used[c] {
				l = c
				break
			}
		}
		used[l] = true
		out[n] = seriesStyle{Color: l.c, Hatch: l.hatch, Dashes: dashPattern(1 + i%5), Marker: 5 + i%6}
	}
	return out
}

// unknownSeries returns the names of sorted that have no fixed style.
func unknownSeries(sorted []string) []string {
	var out []string
	for _, n := range sorted {
		if knownRank(n) == len(knownSeries) {
			out = append(out, n)
		}
	}
	return out
}

// dashPattern returns dash pattern k: 0 solid, 1 dashed, 2 dotted, 3 dash-dot, 4 long dash,
// 5 dash-dot-dot.
func dashPattern(k int) []vg.Length {
	switch k % 6 {
	case 1:
		return []vg.Length{vg.Points(5), vg.Points(2.5)}
	case 2:
		return []vg.Length{vg.Points(1.5), vg.Points(2)}
	case 3:
		return []vg.Length{vg.Points(5), vg.Points(2), vg.Points(1.5), vg.Points(2)}
	case 4:
		return []vg.Length{vg.Points(9), vg.Points(3)}
	case 5:
		return []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2), vg.Points(1.5), vg.Points(2)}
	}
	return nil
}

// markerShape returns marker k: 0 filled circle, 1 filled square, 2 filled triangle,
// 3 filled diamond, 4 filled down-triangle, 5 cross, 6 plus, 7 ring, 8 hollow square,
// 9 hollow triangle, 10 hollow diamond.
func markerShape(k int) draw.GlyphDrawer {
	switch k % 11 {
	case 0:
		return draw.CircleGlyph{}
	case 1:
		return draw.BoxGlyph{}
	case 2:
		return draw.PyramidGlyph{}
	case 3:
		return polyGlyph{pts: diamond, filled: true}
	case 4:
		return polyGlyph{pts: downTriangle, filled: true}
	case 5:
		return draw.CrossGlyph{}
	case 6:
		return draw.PlusGlyph{}
	case 7:
		return draw.RingGlyph{}
	case 8:
		return draw.SquareGlyph{}
	case 9:
		return draw.TriangleGlyph{}
	default:
		return polyGlyph{pts: diamond}
	}
}

// Unit outlines of the custom markers (radius 1).
var (
	diamond      = [][2]float64{{0, 1.25}, {1.1, 0}, {0, -1.25}, {-1.1, 0}}
	downTriangle = [][2]float64{{-1, 0.7}, {1, 0.7}, {0, -1.1}}
)

// polyGlyph is a marker drawn as a polygon, filled or as an outline.
type polyGlyph struct {
	pts    [][2]float64
	filled bool
}

// DrawGlyph implements draw.GlyphDrawer.
func (g polyGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	ps := make([]vg.Point, 0, len(g.pts)+1)
	for _, p := range g.pts {
		ps = append(ps, vg.Point{X: pt.X + vg.Length(p[0])*sty.Radius, Y: pt.Y + vg.Length(p[1])*sty.Radius})
	}
	if g.filled {
		c.FillPolygon(sty.Color, ps)
		return
	}
	c.StrokeLines(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.6)}, append(ps, ps[0]))
}

// tint mixes c with white: f = 0 gives c, 1 white.
func tint(c color.NRGBA, f float64) color.NRGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + f*(255-float64(v)) + 0.5) }
	return color.NRGBA{mix(c.R), mix(c.G), mix(c.B), c.A}
}

// hatchFill fills the rectangle r in style st: solid, or for a hatched style a light tint of
// the colour crossed by lines of the full colour, so that hatched and solid series of one
// colour are told apart at a glance.
func hatchFill(c draw.Canvas, r vg.Rectangle, st seriesStyle) {
	rect := []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
	if st.Hatch == 0 {
		c.FillPolygon(st.Color, c.ClipPolygonXY(rect))
		return
	}
	c.FillPolygon(tint(st.Color, 0.6), c.ClipPolygonXY(rect))
	ls := draw.LineStyle{Color: st.Color, Width: vg.Points(1)}
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	gap := vg.Points(3.5)
	var lines [][]vg.Point
	if st.Hatch == 1 || st.Hatch == 3 {
		lines = append(lines, hatchLines(r.Min.X, r.Min.Y, w, h, gap)...)
	}
	if st.Hatch == 2 || st.Hatch == 3 {
		for _, l := range hatchLines(r.Min.X, r.Min.Y, w, h, gap) {
			// Mirror "/" into "\" about the vertical centre line.
			m := make([]vg.Point, len(l))
			for i, p := range l {
				m[i] = vg.Point{X: r.Min.X + r.Max.X - p.X, Y: p.Y}
			}
			lines = append(lines, m)
		}
	}
	c.StrokeLines(ls, c.ClipLinesXY(lines...)...)
}
