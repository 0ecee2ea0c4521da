package analysis

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// renderText draws t as a boxed text table: light box-drawing lines, one space of padding,
// headers centred (an odd leftover space goes right), numeric columns right-aligned and the
// others left-aligned, and a cell's line breaks kept as lines of its row.
//
// It is written here rather than with a table library because such a library's package
// initialisation (display-width tables) ran at every start of sharebench, tables or not.
// Widths count runes: cells hold numbers, names and symbols such as Δ, ξ, ± or −, which
// take one column each; wide (East Asian) and combining characters are not expected.
func (t *Table) renderText(w *bytes.Buffer) error {
	if t.Title != "" {
		fmt.Fprintf(w, "%s\n", oneLine(t.Title))
	}
	num := t.numericColumns()
	widths := make([]int, len(t.Header))
	lines := func(s string, c int) []string {
		ls := strings.Split(s, "\n")
		for _, l := range ls {
			widths[c] = max(widths[c], utf8.RuneCountInString(l))
		}
		return ls
	}
	header := make([][]string, len(t.Header))
	for c, h := range t.Header {
		header[c] = lines(h, c)
	}
	rows := make([][][]string, len(t.Rows))
	for r := range t.Rows {
		rows[r] = make([][]string, len(t.Header))
		for c := range t.Header {
			rows[r][c] = lines(t.cell(r, c), c)
		}
	}
	rule := func(left, mid, right string) {
		w.WriteString(left)
		for c, n := range widths {
			if c > 0 {
				w.WriteString(mid)
			}
			w.WriteString(strings.Repeat("─", n+2))
		}
		w.WriteString(right + "\n")
	}
	// row writes one table row, as many lines as its tallest cell; align returns the spaces
	// to put left of a cell's line given the spaces it leaves free.
	row := func(cells [][]string, align func(c, free int) int) {
		height := 1
		for _, ls := range cells {
			height = max(height, len(ls))
		}
		for i := range height {
			w.WriteString("│")
			for c, ls := range cells {
				s := ""
				if i < len(ls) {
					s = ls[i]
				}
				free := widths[c] - utf8.RuneCountInString(s)
				left := align(c, free)
				w.WriteString(strings.Repeat(" ", 1+left) + s + strings.Repeat(" ", free-left+1) + "│")
			}
			w.WriteString("\n")
		}
	}
	rule("┌", "┬", "┐")
	row(header, func(_, free int) int { return free / 2 })
	if len(rows) > 0 {
		rule("├", "┼", "┤")
	}
	for _, cells := range rows {
		row(cells, func(c, free int) int {
			if num[c] {
				return free
			}
			return 0
		})
	}
	rule("└", "┴", "┘")
	for _, n := range t.Notes {
		fmt.Fprintf(w, "note: %s\n", oneLine(n))
	}
	return nil
}
