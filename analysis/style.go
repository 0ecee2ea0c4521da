package analysis

import (
	"cmp"
	"image/color"
	"slices"

	"gonum.org/v1/plot/vg"
)

// Policy names with a fixed place and colour in every table and figure.
const (
	PolicyFIFO     = "fifo"
	PolicySJF      = "sjf"
	PolicyTiresias = "tiresias"
	PolicySJFFFS   = "sjf-ffs"
	PolicySJFBSBF  = "sjf-bsbf"
)

// policyRank returns the display rank of a series name: the five built-in policies in the
// order fifo, sjf, tiresias, sjf-ffs, sjf-bsbf, then everything else (alphabetically, by
// compareSeries).
func policyRank(name string) int {
	switch name {
	case PolicyFIFO:
		return 0
	case PolicySJF:
		return 1
	case PolicyTiresias:
		return 2
	case PolicySJFFFS:
		return 3
	case PolicySJFBSBF:
		return 4
	}
	return 5
}

// compareSeries orders series names: built-in policies first in their fixed order, then the
// others alphabetically.
func compareSeries(a, b string) int {
	return cmp.Or(cmp.Compare(policyRank(a), policyRank(b)), cmp.Compare(a, b))
}

// SortSeries sorts series names into display order in place: fifo, sjf, tiresias, sjf-ffs,
// sjf-bsbf, then the others (variants) alphabetically.
func SortSeries(names []string) { slices.SortFunc(names, compareSeries) }

// okabeIto returns colour i of the Okabe–Ito palette, which stays distinguishable under the
// common forms of colour-vision deficiency: 0 black, 1 orange, 2 sky blue, 3 bluish green,
// 4 yellow, 5 blue, 6 vermillion, 7 reddish purple.
func okabeIto(i int) color.NRGBA {
	switch i % 8 {
	case 0:
		return color.NRGBA{0x00, 0x00, 0x00, 0xff}
	case 1:
		return color.NRGBA{0xe6, 0x9f, 0x00, 0xff}
	case 2:
		return color.NRGBA{0x56, 0xb4, 0xe9, 0xff}
	case 3:
		return color.NRGBA{0x00, 0x9e, 0x73, 0xff}
	case 4:
		return color.NRGBA{0xf0, 0xe4, 0x42, 0xff}
	case 5:
		return color.NRGBA{0x00, 0x72, 0xb2, 0xff}
	case 6:
		return color.NRGBA{0xd5, 0x5e, 0x00, 0xff}
	default:
		return color.NRGBA{0xcc, 0x79, 0xa7, 0xff}
	}
}

// seriesStyle is the colour, dash pattern and marker index of a series in a figure.
type seriesStyle struct {
	Color  color.NRGBA
	Dashes []vg.Length
	Marker int
}

// styleFor returns the style of series name, given its position among the non-built-in series
// of the figure (variantIndex; ignored for built-in policies). Built-in policies keep their
// colour in every figure: fifo black, sjf sky blue, tiresias orange, sjf-ffs bluish green,
// sjf-bsbf vermillion. Other series cycle through blue, reddish purple, yellow, then repeat
// the palette with dashes.
func styleFor(name string, variantIndex int) seriesStyle {
	switch name {
	case PolicyFIFO:
		return seriesStyle{okabeIto(0), dashPattern(3), 0}
	case PolicySJF:
		return seriesStyle{okabeIto(2), dashPattern(2), 1}
	case PolicyTiresias:
		return seriesStyle{okabeIto(1), dashPattern(1), 2}
	case PolicySJFFFS:
		return seriesStyle{okabeIto(3), dashPattern(4), 3}
	case PolicySJFBSBF:
		return seriesStyle{okabeIto(6), nil, 4}
	}
	cycle := [...]int{5, 7, 4, 2, 1, 3, 6, 0}
	i := variantIndex % len(cycle)
	return seriesStyle{okabeIto(cycle[i]), dashPattern(variantIndex/len(cycle) + i%2), 5 + variantIndex%3}
}

// dashPattern returns dash pattern k: 0 solid, 1 dashed, 2 dotted, 3 dash-dot, 4 long dash.
func dashPattern(k int) []vg.Length {
	switch k % 5 {
	case 1:
		return []vg.Length{vg.Points(5), vg.Points(2.5)}
	case 2:
		return []vg.Length{vg.Points(1.5), vg.Points(2)}
	case 3:
		return []vg.Length{vg.Points(5), vg.Points(2), vg.Points(1.5), vg.Points(2)}
	case 4:
		return []vg.Length{vg.Points(9), vg.Points(3)}
	}
	return nil
}

// styles assigns styles to the series names of one figure, in display order.
func styles(names []string) map[string]seriesStyle {
	out := make(map[string]seriesStyle, len(names))
	v := 0
	sorted := slices.Clone(names)
	SortSeries(sorted)
	for _, n := range sorted {
		if policyRank(n) < 5 {
			out[n] = styleFor(n, 0)
			continue
		}
		out[n] = styleFor(n, v)
		v++
	}
	return out
}
