package queue

import "testing"

func TestVisitorIDsAreRandomAndParse(t *testing.T) {
	seen := make(map[VisitorID]bool)
	for i := 0; i < 1000; i++ {
		id := NewVisitorID()
		if seen[id] {
			t.Fatal("duplicate visitor id")
		}
		seen[id] = true
		back, err := ParseVisitorID(id.String())
		if err != nil || back != id {
			t.Fatalf("parse %s: %v %v", id, back, err)
		}
	}
	for _, bad := range []string{"", "xyz", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef00"} {
		if _, err := ParseVisitorID(bad); err == nil {
			t.Errorf("ParseVisitorID(%q) accepted", bad)
		}
	}
}
