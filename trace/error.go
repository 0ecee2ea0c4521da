package trace

import "strconv"

// SyntaxError reports malformed or invalid trace input at a position in a file.
// Its Error method prints "file:line: column: msg", for example
// `trace_data_new_32.csv:12: submit_time: invalid number "2o20"`; the column part is
// left out when the problem concerns a whole line or the header.
type SyntaxError struct {
	File   string // file name as given to the reader
	Line   int    // 1-based line number; 0 for jobs that come from no file
	Column string // column name as spelled in the header; "" for line-level problems
	Msg    string // what is wrong, in lower case
}

// Error formats the error as "file:line: column: msg".
func (e *SyntaxError) Error() string {
	b := make([]byte, 0, len(e.File)+len(e.Column)+len(e.Msg)+16)
	b = append(b, e.File...)
	if e.Line > 0 {
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(e.Line), 10)
	}
	b = append(b, ": "...)
	if e.Column != "" {
		b = append(b, e.Column...)
		b = append(b, ": "...)
	}
	b = append(b, e.Msg...)
	return string(b)
}
