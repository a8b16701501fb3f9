package statefile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteIsFrame holds Write, which frames a body in parts, to the one format:
// the file's bytes are Frame's, and Read gives the body back.
func TestWriteIsFrame(t *testing.T) {
	for _, body := range [][]byte{{}, []byte("a room's state"), bytes.Repeat([]byte{0xa5, 0}, 70_000)} {
		file := filepath.Join(t.TempDir(), "room.state")
		if err := Write(file, body); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, Frame(body)) {
			t.Fatalf("a body of %d bytes: the file is not its frame", len(body))
		}
		back, err := Read(file)
		if err != nil || !bytes.Equal(back, body) {
			t.Fatalf("a body of %d bytes read back as %d bytes, %v", len(body), len(back), err)
		}
	}
}
