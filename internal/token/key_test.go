package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// keyedLikeTheDocs derives a keyed visitor id as docs/people-and-devices.md says, with
// the standard library alone.
func keyedLikeTheDocs(secret, room, key string) queue.VisitorID {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("waiting-room key\x00" + room + "\x00" + key))
	var id queue.VisitorID
	copy(id[:], m.Sum(nil))
	return id
}

func TestKeyedIDIsTheDocumentedMAC(t *testing.T) {
	k := NewKeyring(docRoom, [][]byte{[]byte(docSecret)})
	for _, key := range []string{"", "a", "account-42", strings.Repeat("x", 39), strings.Repeat("y", 40), strings.Repeat("z", MaxKey)} {
		if got, want := k.KeyedID(key), keyedLikeTheDocs(docSecret, docRoom, key); got != want {
			t.Errorf("key of %d bytes: got %v, the documented MAC is %v", len(key), got, want)
		}
	}
}

// Every instance sharing the room's secret derives one id from one key; another room,
// another secret or another key is another visitor.
func TestKeyedIDBoundToRoomSecretAndKey(t *testing.T) {
	a := NewKeyring("shop", [][]byte{[]byte(docSecret)})
	same := NewKeyring("shop", [][]byte{[]byte(docSecret), []byte("an older secret, still accepted")})
	if a.KeyedID("u1") != same.KeyedID("u1") {
		t.Fatal("two keyrings with the same first secret derive different ids for one key")
	}
	if a.KeyedID("u1") == NewKeyring("other", [][]byte{[]byte(docSecret)}).KeyedID("u1") {
		t.Error("one key is the same visitor in two rooms")
	}
	if a.KeyedID("u1") == NewKeyring("shop", [][]byte{[]byte("another secret entirely")}).KeyedID("u1") {
		t.Error("the id does not depend on the secret: anyone could derive it")
	}
}

// Odd keys are just bytes: each is its own visitor, none is cut or cleaned up into
// another's.
func TestKeyedIDOddKeysDoNotCollide(t *testing.T) {
	k := NewKeyring("shop", [][]byte{[]byte(docSecret)})
	keys := []string{
		"user", "user\x00", "\x00user", "user\n", "user\r\n", "User", " user", "user ",
		"\xff\xfe", "\xff\xfd", "\xc3", "e\u0301", "\u00e9", "\x00", "\x00\x00",
		strings.Repeat("a", MaxKey), strings.Repeat("a", MaxKey-1) + "b", strings.Repeat("a", MaxKey-1),
	}
	seen := map[queue.VisitorID]string{}
	for _, key := range keys {
		id := k.KeyedID(key)
		if other, ok := seen[id]; ok {
			t.Errorf("keys %q and %q are one visitor", other, key)
		}
		seen[id] = key
		if k.KeyedID(key) != id {
			t.Errorf("key %q derives two ids", key)
		}
	}
}

func TestKeyedIDAllocatesNothing(t *testing.T) {
	if testalloc.Race {
		t.Skip("the race detector makes sync.Pool drop items, so a pooled MAC's allocations are not counted under it")
	}
	k := NewKeyring("shop", [][]byte{[]byte(docSecret)})
	key := strings.Repeat("k", MaxKey)
	k.KeyedID(key) // fill the pool
	if n := testing.AllocsPerRun(100, func() { k.KeyedID(key) }); n != 0 {
		t.Errorf("KeyedID allocates %v times a call", n)
	}
}

func BenchmarkKeyedID(b *testing.B) {
	k := NewKeyring("shop", [][]byte{[]byte(docSecret)})
	b.ReportAllocs()
	for b.Loop() {
		k.KeyedID("account-1234567890")
	}
}
