package saletest

import (
	"fmt"
	"strings"
	"time"
)

// traceLen is how many of the last actions a failure prints.
const traceLen = 40

// trace keeps the sale's last actions, for the failure message.
type trace struct {
	lines [traceLen]string
	n     int
}

func (tr *trace) add(at time.Time, format string, args ...any) {
	tr.lines[tr.n%traceLen] = fmt.Sprintf("%8.2fs  ", at.Sub(saleStart).Seconds()) + fmt.Sprintf(format, args...)
	tr.n++
}

// String is the last actions, oldest first.
func (tr *trace) String() string {
	var b strings.Builder
	for i := max(0, tr.n-traceLen); i < tr.n; i++ {
		b.WriteString("    ")
		b.WriteString(tr.lines[i%traceLen])
		b.WriteByte('\n')
	}
	return b.String()
}
