package analysis

import (
	"bytes"
	"fmt"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// renderText draws t as a boxed text table. This file is the only user of tablewriter.
func (t *Table) renderText(w *bytes.Buffer) error {
	if t.Title != "" {
		fmt.Fprintf(w, "%s\n", oneLine(t.Title))
	}
	num := t.numericColumns()
	align := make([]tw.Align, len(t.Header))
	for c := range align {
		align[c] = tw.AlignLeft
		if num[c] {
			align[c] = tw.AlignRight
		}
	}
	tbl := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleLight)})),
		tablewriter.WithEastAsian(tw.Off),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	header := make([]any, len(t.Header))
	for i, h := range t.Header {
		header[i] = h
	}
	tbl.Header(header...)
	for r := range t.Rows {
		row := make([]string, len(t.Header))
		for c := range row {
			row[c] = t.cell(r, c)
		}
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "note: %s\n", oneLine(n))
	}
	return nil
}
