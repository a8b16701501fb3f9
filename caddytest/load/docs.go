package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// The lines that bound the table in docs/performance.md, which -docs rewrites.
const (
	tableBegin = "<!-- table: begin -->"
	tableEnd   = "<!-- table: end -->"
)

// writeDocs puts the run's Markdown table into the file at path, in place of what
// stands between tableBegin and tableEnd, and leaves the rest of the file as it is.
func writeDocs(path string, rows []row) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var table bytes.Buffer
	printTable(&table, rows, true)
	out, err := replaceTable(doc, table.Bytes())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// replaceTable returns doc with the text between its table markers replaced by table.
func replaceTable(doc, table []byte) ([]byte, error) {
	begin := bytes.Index(doc, []byte(tableBegin))
	end := bytes.Index(doc, []byte(tableEnd))
	if begin < 0 || end < begin {
		return nil, errors.New("no " + tableBegin + " ... " + tableEnd + " block")
	}
	var out bytes.Buffer
	out.Write(doc[:begin+len(tableBegin)])
	out.WriteString("\n\n")
	out.Write(bytes.TrimSpace(table))
	out.WriteString("\n\n")
	out.Write(doc[end:])
	return out.Bytes(), nil
}
