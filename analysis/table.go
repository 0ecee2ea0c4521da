package analysis

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/template"
)

// Table is a computed table: a title, a header, rows of formatted cells and notes (caveats
// and definitions) that are printed under the table in every format.
type Table struct {
	// Title names the table; empty for none.
	Title string
	// Header holds the column names, with units.
	Header []string
	// Rows holds the formatted cells; every row has len(Header) cells.
	Rows [][]string
	// Notes are printed under the table, one per line.
	Notes []string
}

// Format is an output format for tables.
type Format string

// The table formats.
const (
	// Text is a boxed plain-text table for terminals.
	Text Format = "text"
	// Markdown is a GitHub-flavoured Markdown table.
	Markdown Format = "md"
	// CSV is RFC 4180 CSV for machines: the header and plain-number cells only (see
	// renderCSV); the title and the notes are in the other formats.
	CSV Format = "csv"
	// LaTeX is a booktabs table environment.
	LaTeX Format = "latex"
)

// ParseFormat accepts text, md (or markdown), csv and latex (or tex).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "text", "txt":
		return Text, nil
	case "md", "markdown":
		return Markdown, nil
	case "csv":
		return CSV, nil
	case "latex", "tex":
		return LaTeX, nil
	}
	return "", fmt.Errorf("unknown table format %q (known: text, md, csv, latex)", s)
}

// Render writes t to w in format f.
func (t *Table) Render(w io.Writer, f Format) error {
	var buf bytes.Buffer
	var err error
	switch f {
	case Text:
		err = t.renderText(&buf)
	case Markdown:
		t.renderMarkdown(&buf)
	case CSV:
		err = t.renderCSV(&buf)
	case LaTeX:
		err = t.renderLaTeX(&buf)
	default:
		return fmt.Errorf("analysis: unknown table format %q", f)
	}
	if err != nil {
		return fmt.Errorf("analysis: render %q: %w", t.Title, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// RenderAll writes several tables in format f, separated by a blank line.
func RenderAll(w io.Writer, f Format, tables ...Table) error {
	for i := range tables {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := tables[i].Render(w, f); err != nil {
			return err
		}
	}
	return nil
}

// cell returns row r, column c, or "" when the row is short.
func (t *Table) cell(r, c int) string {
	if c < len(t.Rows[r]) {
		return t.Rows[r][c]
	}
	return ""
}

// numericColumns reports, per column, whether every non-empty cell looks like a number
// (possibly with a sign, ±, %, or a placeholder dash), so that it is right-aligned.
func (t *Table) numericColumns() []bool {
	out := make([]bool, len(t.Header))
	for c := range t.Header {
		num, any := true, false
		for r := range t.Rows {
			s := t.cell(r, c)
			if s == "" || s == "–" || s == "n/a" {
				continue
			}
			any = true
			if !looksNumeric(s) {
				num = false
				break
			}
		}
		out[c] = num && any
	}
	return out
}

// looksNumeric reports whether s is one or more numbers, possibly signed (+, -, −), with
// percent signs, ±, brackets or commas around them: "−31.7", "[−35.1, −28.4]", "62.7".
func looksNumeric(s string) bool {
	s = strings.NewReplacer("−", "-", "±", " ", "[", " ", "]", " ", ",", " ", "%", " ").Replace(s)
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return false
	}
	for _, f := range fields {
		if _, err := strconv.ParseFloat(f, 64); err != nil {
			return false
		}
	}
	return true
}

// oneLine replaces line breaks so a note stays on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func (t *Table) renderMarkdown(w *bytes.Buffer) {
	esc := func(s string) string {
		s = strings.ReplaceAll(s, `\`, `\\`)
		s = strings.ReplaceAll(s, "|", `\|`)
		return oneLine(s)
	}
	if t.Title != "" {
		fmt.Fprintf(w, "**%s**\n\n", esc(t.Title))
	}
	num := t.numericColumns()
	w.WriteString("|")
	for _, h := range t.Header {
		fmt.Fprintf(w, " %s |", esc(h))
	}
	w.WriteString("\n|")
	for c := range t.Header {
		if num[c] {
			w.WriteString("---:|")
		} else {
			w.WriteString("---|")
		}
	}
	w.WriteString("\n")
	for r := range t.Rows {
		w.WriteString("|")
		for c := range t.Header {
			fmt.Fprintf(w, " %s |", esc(t.cell(r, c)))
		}
		w.WriteString("\n")
	}
	if len(t.Notes) > 0 {
		w.WriteString("\n")
		for _, n := range t.Notes {
			fmt.Fprintf(w, "- %s\n", esc(n))
		}
	}
}

// renderCSV writes the machine-readable form of t: a header and the rows, nothing else (no
// title, no notes: those stay in the md, LaTeX and text forms). Cells become plain numbers
// (ASCII minus, no plus sign or percent sign), missing values ("–", "n/a") become empty
// cells, and a column of intervals "[lo, hi]" or of "value ± half" is split into two
// columns; see machineColumns.
func (t *Table) renderCSV(w *bytes.Buffer) error {
	cw := csv.NewWriter(w)
	cols := t.machineColumns()
	var header []string
	for _, c := range cols {
		header = append(header, c.header...)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for r := range t.Rows {
		var row []string
		for i, c := range cols {
			row = append(row, c.cells(t.cell(r, i))...)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvColumn is how one table column is written as CSV.
type csvColumn struct {
	header []string
	kind   csvKind
}

type csvKind int

const (
	csvText      csvKind = iota // text, with ASCII minus; missing markers emptied
	csvNumber                   // one plain number per cell
	csvInterval                 // "[lo, hi]" → two columns
	csvPlusMinus                // "value ± half" → two columns
)

// machineColumns classifies every column by its non-missing cells: all numbers, all
// intervals, all "value ± half", or text.
func (t *Table) machineColumns() []csvColumn {
	cols := make([]csvColumn, len(t.Header))
	for c, h := range t.Header {
		kind, seen := csvNumber, false
		for r := range t.Rows {
			s := strings.TrimSpace(t.cell(r, c))
			if isMissing(s) {
				continue
			}
			k := cellKind(s)
			if seen && k != kind {
				kind = csvText
				break
			}
			kind, seen = k, true
			if k == csvText {
				break
			}
		}
		if !seen {
			kind = csvText
		}
		switch kind {
		case csvInterval:
			cols[c] = csvColumn{header: []string{withQualifier(h, "low"), withQualifier(h, "high")}, kind: kind}
		case csvPlusMinus:
			cols[c] = csvColumn{header: []string{h, withQualifier(h, "± 95% CI")}, kind: kind}
		default:
			cols[c] = csvColumn{header: []string{h}, kind: kind}
		}
	}
	return cols
}

// cells returns the CSV cells of one table cell s.
func (c csvColumn) cells(s string) []string {
	s = strings.TrimSpace(s)
	width := len(c.header)
	if isMissing(s) {
		return make([]string, width)
	}
	switch c.kind {
	case csvNumber:
		return []string{plainNumber(s)}
	case csvInterval:
		lo, hi, _ := strings.Cut(strings.Trim(s, "[]"), ",")
		return []string{plainNumber(lo), plainNumber(hi)}
	case csvPlusMinus:
		v, h, _ := strings.Cut(s, "±")
		return []string{plainNumber(v), plainNumber(h)}
	}
	return []string{asciiMinus(s)}
}

// isMissing reports whether a cell is empty or a placeholder for a missing value.
func isMissing(s string) bool { return s == "" || s == "–" || s == "n/a" }

// cellKind classifies one non-missing cell.
func cellKind(s string) csvKind {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		lo, hi, ok := strings.Cut(strings.Trim(s, "[]"), ",")
		if ok && isNumber(lo) && isNumber(hi) {
			return csvInterval
		}
		return csvText
	}
	if v, h, ok := strings.Cut(s, "±"); ok {
		if isNumber(v) && isNumber(h) {
			return csvPlusMinus
		}
		return csvText
	}
	if isNumber(s) {
		return csvNumber
	}
	return csvText
}

// isNumber reports whether s is one number, possibly with a sign (+, -, −) and a trailing %.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(plainNumber(s), 64)
	return err == nil && strings.TrimSpace(s) != ""
}

// plainNumber writes a formatted number plainly: "−31.7" → "-31.7", "+4.8" → "4.8",
// "62.7%" → "62.7". The digits are kept as formatted.
func plainNumber(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(asciiMinus(s)), "%")
	return strings.TrimPrefix(strings.TrimSpace(s), "+")
}

// asciiMinus replaces the typographic minus sign with '-'.
func asciiMinus(s string) string { return strings.ReplaceAll(s, "−", "-") }

// withQualifier inserts q before a trailing unit: "95% CI (%)" → "95% CI low (%)".
func withQualifier(h, q string) string {
	if i := strings.LastIndex(h, " ("); i >= 0 && strings.HasSuffix(h, ")") {
		return h[:i] + " " + q + h[i:]
	}
	return h + " " + q
}

// latexTemplate renders a booktabs table; every string is escaped before it reaches the
// template.
const latexTemplate = `\begin{table}[tbp]
\centering
{{- if .Title}}
\caption{ {{- .Title -}} }
{{- end}}
\begin{tabular}{ {{- .Spec -}} }
\toprule
{{join .Header " & "}} \\
\midrule
{{- range .Rows}}
{{join . " & "}} \\
{{- end}}
\bottomrule
\end{tabular}
{{- if .Notes}}
\par\smallskip
\begin{minipage}{\linewidth}\footnotesize
{{- range .Notes}}
{{.}}\par
{{- end}}
\end{minipage}
{{- end}}
\end{table}
`

func (t *Table) renderLaTeX(w *bytes.Buffer) error {
	tmpl, err := template.New("latex").Funcs(template.FuncMap{"join": strings.Join}).Parse(latexTemplate)
	if err != nil {
		return err
	}
	num := t.numericColumns()
	var spec strings.Builder
	for c := range t.Header {
		if num[c] {
			spec.WriteByte('r')
		} else {
			spec.WriteByte('l')
		}
	}
	data := struct {
		Title, Spec string
		Header      []string
		Rows        [][]string
		Notes       []string
	}{Title: LaTeXEscape(t.Title), Spec: spec.String()}
	for _, h := range t.Header {
		data.Header = append(data.Header, LaTeXEscape(h))
	}
	for r := range t.Rows {
		row := make([]string, len(t.Header))
		for c := range row {
			row[c] = LaTeXEscape(t.cell(r, c))
		}
		data.Rows = append(data.Rows, row)
	}
	for _, n := range t.Notes {
		data.Notes = append(data.Notes, LaTeXEscape(n))
	}
	return tmpl.Execute(w, data)
}

// LaTeXEscape escapes the LaTeX special characters of s (\ { } $ & % # _ ~ ^ < > |) and writes
// the non-ASCII symbols used in tables (Δ ξ ± − × ÷ ≤ ≥ … – — →) as LaTeX commands.
func LaTeXEscape(s string) string {
	var b strings.Builder
	for _, r := range oneLine(s) {
		switch r {
		case '\\':
			b.WriteString(`\textbackslash{}`)
		case '{', '}', '$', '&', '%', '#', '_':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '~':
			b.WriteString(`\textasciitilde{}`)
		case '^':
			b.WriteString(`\textasciicircum{}`)
		case '<':
			b.WriteString(`\textless{}`)
		case '>':
			b.WriteString(`\textgreater{}`)
		case '|':
			b.WriteString(`\textbar{}`)
		case 'Δ':
			b.WriteString(`\ensuremath{\Delta}`)
		case 'ξ':
			b.WriteString(`\ensuremath{\xi}`)
		case '±':
			b.WriteString(`\ensuremath{\pm}`)
		case '−':
			b.WriteString(`\ensuremath{-}`)
		case '×':
			b.WriteString(`\ensuremath{\times}`)
		case '÷':
			b.WriteString(`\ensuremath{\div}`)
		case '≤':
			b.WriteString(`\ensuremath{\leq}`)
		case '≥':
			b.WriteString(`\ensuremath{\geq}`)
		case '→':
			b.WriteString(`\ensuremath{\rightarrow}`)
		case '…':
			b.WriteString(`\ldots{}`)
		case '–':
			b.WriteString(`--`)
		case '—':
			b.WriteString(`---`)
		case '√':
			b.WriteString(`\ensuremath{\surd}`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
