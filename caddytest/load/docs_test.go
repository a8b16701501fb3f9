package main

import (
	"strings"
	"testing"
)

// -docs replaces the table between the markers and nothing else, and refuses a file
// without them rather than append a table somewhere.
func TestReplaceTable(t *testing.T) {
	doc := "# Performance\n\nmethod\n\n" + tableBegin + "\n\n| old |\n\n" + tableEnd + "\n\nafter\n"
	got, err := replaceTable([]byte(doc), []byte("| new |\n|---|\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# Performance\n\nmethod\n\n" + tableBegin + "\n\n| new |\n|---|\n\n" + tableEnd + "\n\nafter\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{"no markers", tableEnd + "\n" + tableBegin} {
		if _, err := replaceTable([]byte(bad), []byte("| x |")); err == nil || !strings.Contains(err.Error(), "block") {
			t.Errorf("replaceTable(%q) = %v, want an error", bad, err)
		}
	}
}
