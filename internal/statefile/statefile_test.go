package statefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var body = []byte("a body that the memory store would write: it is not read here")

// A file cut anywhere, a record boundary or inside one, is refused as truncated.
func TestTruncatedAnywhereIsRefused(t *testing.T) {
	file := Frame(body)
	for n := range len(file) {
		if _, err := Unframe(file[:n]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("the file cut at %d of %d bytes: %v, want ErrTruncated", n, len(file), err)
		}
	}
	if got, err := Unframe(file); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the whole file: %q, %v", got, err)
	}
}

// Any one bit flipped is refused: never a body that was not written.
func TestAFlippedBitIsRefused(t *testing.T) {
	file := Frame(body)
	for i := range len(file) {
		for bit := range 8 {
			b := bytes.Clone(file)
			b[i] ^= 1 << bit
			if got, err := Unframe(b); err == nil {
				t.Fatalf("bit %d of byte %d flipped: read %q", bit, i, got)
			}
		}
	}
}

func TestANewerVersionIsRefused(t *testing.T) {
	file := Frame(body)
	file[len(magic)+1] = Version + 1
	if _, err := Unframe(file); !errors.Is(err, ErrNewer) {
		t.Fatalf("a newer version's file: %v, want ErrNewer", err)
	}
}

func TestNotAStateFileIsRefused(t *testing.T) {
	for _, b := range [][]byte{[]byte("{\"json\": true}"), []byte("cwrstatf" + string(Frame(body)[8:]))} {
		if _, err := Unframe(b); !errors.Is(err, ErrNotState) {
			t.Fatalf("%q: %v, want ErrNotState", b[:8], err)
		}
	}
}

// The file holds the room's secret: only its owner reads it.
func TestTheFileIsTheOwnersAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rooms", "shop.state")
	if err := Write(path, body); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Fatalf("%s has mode %v, want no access for group or others", p, perm)
		}
	}
	if got, err := Read(path); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %q, %v", got, err)
	}
}

// A damaged file falls back to the save before it, and says which file was wrong.
func TestOpenFallsBackToThePreviousSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.state")
	for _, b := range []string{"first", "second"} {
		if err := Write(path, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	raw, _ := os.ReadFile(path)
	if err := os.WriteFile(path, raw[:len(raw)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	var loaded string
	var reported []string
	from := Open(path, func(b []byte) error { loaded = string(b); return nil },
		func(file string, err error) { reported = append(reported, file+": "+err.Error()) })
	if from != path+".prev" || loaded != "first" {
		t.Fatalf("restored %q from %q, want the previous save", loaded, from)
	}
	if len(reported) != 1 || reported[0] != path+": truncated" {
		t.Fatalf("reported %q, want the damaged file named", reported)
	}

	// A body the loader refuses is passed over the same way; none left is a start empty.
	reported = nil
	from = Open(path, func([]byte) error { return errors.New("another room's") }, func(file string, err error) {
		reported = append(reported, file)
	})
	if from != "" || len(reported) != 2 {
		t.Fatalf("with nothing to trust: restored from %q, reported %q", from, reported)
	}
}

func TestOpenOfNothingIsAFirstStart(t *testing.T) {
	from := Open(filepath.Join(t.TempDir(), "shop.state"), func([]byte) error {
		t.Fatal("loaded a file that is not there")
		return nil
	}, func(file string, err error) { t.Fatalf("reported %s: %v", file, err) })
	if from != "" {
		t.Fatalf("restored from %q", from)
	}
}

// A directory that cannot be written fails the saves, reported once for the run of
// failures, and once more when saving works again; the state is never half written.
func TestASaverOnADirectoryThatCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	blocked := filepath.Join(dir, "rooms")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil { // a file where the directory should be
		t.Fatal(err)
	}
	path := filepath.Join(blocked, "shop.state")
	var failed, healed int
	s := NewSaver(path, 0, func(dst []byte) []byte { return append(dst, body...) },
		func(error) { failed++ }, func() { healed++ })
	for range 3 {
		if err := s.Save(); err == nil {
			t.Fatal("a save into a file's place succeeded")
		}
	}
	if failed != 1 || healed != 0 {
		t.Fatalf("after three failed saves: %d failure reports, %d heal reports; want 1, 0", failed, healed)
	}
	if err := os.Remove(blocked); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("the stop's save, with the directory free: %v", err)
	}
	if failed != 1 || healed != 1 {
		t.Fatalf("after saving again: %d failure reports, %d heal reports; want 1, 1", failed, healed)
	}
	if got, err := Read(path); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %q, %v", got, err)
	}
}

// A read-only directory, where permissions hold (not for root, who passes them).
func TestAReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into a read-only directory; TestASaverOnADirectoryThatCannotBeWritten covers the failure")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if err := Write(filepath.Join(dir, "shop.state"), body); err == nil {
		t.Fatal("a save into a read-only directory succeeded")
	}
}

// One process holds a room's file: a second (a second Caddy on the same data
// directory, `caddy validate` beside a running one) is told so and keeps off it.
func TestASecondProcessIsKeptOff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.state")
	release, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("a second lock: %v, want ErrInUse", err)
	}
	release()
	again, err := Lock(path)
	if err != nil {
		t.Fatalf("the lock after its release: %v", err)
	}
	again()
}

func FuzzUnframe(f *testing.F) {
	f.Add(Frame(body))
	f.Add(Frame(nil))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Unframe(b)
		if err != nil {
			return
		}
		if !bytes.Equal(Frame(got), b) {
			t.Fatalf("%q read as a body whose file is not it", b)
		}
	})
}

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
