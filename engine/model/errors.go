package model

import (
	"fmt"
	"strings"
)

// Error is one problem found in a process definition. It names the element
// and, for imported XML, its line.
type Error struct {
	Process string
	Element string // node or flow id; "" for the process itself
	Line    int
	Msg     string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "process %q", e.Process)
	if e.Element != "" {
		fmt.Fprintf(&b, ": element %q", e.Element)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}
