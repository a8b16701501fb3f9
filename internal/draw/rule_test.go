package draw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The commitment is SHA-256 of the seed's 32 bytes, not of its hex, and a seed
// matches its own commitment only.
func TestCommitmentIsSHA256OfTheSeedsBytes(t *testing.T) {
	seed := NewSeed()
	sum := sha256.Sum256(seed[:])
	if want := "sha256:" + hex.EncodeToString(sum[:]); seed.Commitment() != want {
		t.Fatalf("commitment %s, want %s", seed.Commitment(), want)
	}
	if !seed.Matches(seed.Commitment()) {
		t.Fatal("a seed does not match its own commitment")
	}
	other := seed
	other[31] ^= 1
	if other.Matches(seed.Commitment()) || seed.Matches(strings.ToUpper(seed.Commitment())) {
		t.Fatal("a seed matches a commitment not its own")
	}
	back, err := ParseSeed(seed.String())
	if err != nil || back != seed {
		t.Fatalf("ParseSeed(%s) = %x, %v", seed, back, err)
	}
	for _, bad := range []string{"", seed.String()[:63], strings.ToUpper(seed.String()), seed.String() + "0", "zz" + seed.String()[2:]} {
		if _, err := ParseSeed(bad); err == nil {
			t.Errorf("ParseSeed(%q) accepted", bad)
		}
	}
}

// Two seeds drawn one after the other differ: the seed is random, not a counter.
func TestSeedsAndEntriesAreRandom(t *testing.T) {
	if NewSeed() == NewSeed() {
		t.Fatal("two new seeds are equal")
	}
	if NewEntry() == NewEntry() {
		t.Fatal("two new entry ids are equal")
	}
}

// The drawn order is the documented rule, computed here from the seed and the
// entry ids' text alone with nothing of the package's: sort by HMAC-SHA256(seed
// bytes, entry text), ascending.
func TestOrderIsTheDocumentedRule(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 10, 1000} {
		seed, entries := randomDraw(r, n)
		texts := make([]string, n)
		for i, e := range entries {
			texts[i] = e.String()
		}
		mac := func(s string) []byte {
			h := hmac.New(sha256.New, seed[:])
			h.Write([]byte(s))
			return h.Sum(nil)
		}
		sort.Slice(texts, func(i, j int) bool { return bytes.Compare(mac(texts[i]), mac(texts[j])) < 0 })
		order := Order(seed, entries)
		if len(order) != n {
			t.Fatalf("n=%d: the order has %d entries", n, len(order))
		}
		for i, e := range order {
			if e.String() != texts[i] {
				t.Fatalf("n=%d: place %d is %s, the rule says %s", n, i+1, e, texts[i])
			}
		}
	}
}

// The order follows from the seed and the set of entries, not from the order they
// came in (nor the instance that took them); another seed gives another order.
func TestOrderDependsOnTheSeedAndTheEntriesAlone(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	seed, entries := randomDraw(r, 200)
	order := Order(seed, entries)
	shuffled := slices.Clone(entries)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if again := Order(seed, shuffled); !slices.Equal(again, order) {
		t.Fatal("the same seed and entries in another arrival order give another drawn order")
	}
	other := seed
	other[0] ^= 0x80
	if slices.Equal(Order(other, entries), order) {
		t.Fatal("another seed gives the same order of 200 entries")
	}
}

// Equal ranks (never seen in practice) go by entry id, so the order is total.
func TestEqualRanksGoByEntryID(t *testing.T) {
	a, b := Entry{1}, Entry{2}
	var same Rank
	if Compare(a, same, b, same) >= 0 || Compare(b, same, a, same) <= 0 || Compare(a, same, a, same) != 0 {
		t.Fatal("equal ranks are not ordered by entry id")
	}
	lo, hi := Rank{0: 1}, Rank{0: 2}
	if Compare(b, lo, a, hi) >= 0 {
		t.Fatal("the entry id decided before the rank")
	}
}

// The entries list is what a visitor downloads and hashes with sha256sum: every id,
// sorted, each on a line ending in "\n", the last one too; no id twice.
func TestEntriesListIsSortedLinesEachEndingInANewline(t *testing.T) {
	entries := []Entry{{0xff}, {0x00, 1}, {0x0a}}
	list, err := List(entries)
	if err != nil {
		t.Fatal(err)
	}
	want := "00010000000000000000000000000000\n" +
		"0a000000000000000000000000000000\n" +
		"ff000000000000000000000000000000\n"
	if string(list) != want {
		t.Fatalf("list:\n%s\nwant:\n%s", list, want)
	}
	sum := sha256.Sum256([]byte(want))
	if got := EntriesHash(list); got != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("entries hash %s", got)
	}
	if empty, err := List(nil); err != nil || len(empty) != 0 {
		t.Fatalf("the list of no entries is %q, %v", empty, err)
	}
	if _, err := List([]Entry{{1}, {2}, {1}}); err == nil {
		t.Fatal("a list with an entry twice was made")
	}
	if entries[0] != (Entry{0xff}) {
		t.Fatal("List reordered its argument")
	}
}

func TestEntryText(t *testing.T) {
	e := NewEntry()
	if s := e.String(); len(s) != EntryText || strings.ToLower(s) != s {
		t.Fatalf("entry text %q", s)
	}
	if back, err := ParseEntry(e.String()); err != nil || back != e {
		t.Fatalf("ParseEntry(%s) = %s, %v", e, back, err)
	}
	for _, bad := range []string{"", strings.ToUpper(e.String()), e.String()[:31], e.String() + "0", " " + e.String()[1:]} {
		if _, err := ParseEntry(bad); err == nil {
			t.Errorf("ParseEntry(%q) accepted", bad)
		}
	}
}

// randomDraw is a seed and n entry ids from r.
func randomDraw(r *rand.Rand, n int) (Seed, []Entry) {
	var seed Seed
	for i := range seed {
		seed[i] = byte(r.Uint32())
	}
	entries := make([]Entry, n)
	for i := range entries {
		for j := range entries[i] {
			entries[i][j] = byte(r.Uint32())
		}
	}
	return seed, entries
}
