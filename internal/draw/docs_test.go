package draw

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw/drawtest"
)

// fairnessPage is the user's page of the rule, which holds the verifier script and
// the worked example the tests here run.
var fairnessPage = filepath.Join("..", "..", "docs", "fairness.md")

// docsFiles returns the fenced blocks of docs/fairness.md that name a file, by name.
func docsFiles(t testing.TB) map[string]string {
	t.Helper()
	return drawtest.DocsFiles(t, fairnessPage, "verify-receipt.mjs", "receipt.json", "page.json", "entries.txt", "output")
}

// The worked example on the page is what the room makes: its receipt is the one the
// room signs for that entry with the example's secret (Ed25519 signs alike every
// time, so this holds the key's derivation and the canonical bytes across
// versions), it verifies with the place the page says, its entries list hashes to
// the page's, and the order table is the rule's.
func TestDocsExample(t *testing.T) {
	files := docsFiles(t)
	receipt := []byte(strings.TrimSuffix(files["receipt.json"], "\n"))
	page := []byte(strings.TrimSuffix(files["page.json"], "\n"))
	res, err := Verify(receipt, page, strings.NewReader(files["entries.txt"]))
	if err != nil {
		t.Fatal(err)
	}
	if want := "your place was 2, and the draw is the one committed at 2031-06-01T09:30:00Z\n"; files["output"] != want ||
		res.Place != 2 || res.Page.Committed.Format(time.RFC3339) != "2031-06-01T09:30:00Z" {
		t.Fatalf("the example gives place %d, committed %s; the page says %q", res.Place, res.Page.Committed, files["output"])
	}
	s, err := NewSigner("drop", []byte("an example secret: never use it!"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Sign(res.Receipt)
	if err != nil {
		t.Fatal(err)
	}
	if s.PublicKey() != res.Page.PublicKey || again.Signature != res.Receipt.Signature {
		t.Fatalf("the room signs the example with key %s and signature %s; the page shows %s and %s",
			s.PublicKey(), again.Signature, res.Page.PublicKey, res.Receipt.Signature)
	}
	var seed Seed
	for i := range seed {
		seed[i] = byte(i)
	}
	if p, _ := ParseSeed(res.Page.Seed); p != seed {
		t.Fatalf("the example's seed is %s, the page says it is the bytes 0 to 31", res.Page.Seed)
	}
	signed, _ := res.Receipt.Canonical()
	doc, err := os.ReadFile(fairnessPage)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, append(append([]byte("  "), signed...), '\n')) {
		t.Errorf("the page does not show the example's signed bytes:\n%s", signed)
	}
	r := NewRanker(seed)
	var entries []Entry
	for _, line := range strings.Fields(files["entries.txt"]) {
		e, err := ParseEntry(line)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	for i, e := range Order(seed, entries) {
		rank := r.Rank(e)
		row := "| " + string(rune('1'+i)) + " | `" + e.String() + "` | `" + hex.EncodeToString(rank[:]) + "` |"
		if !bytes.Contains(doc, []byte(row)) {
			t.Errorf("the page's order table has no row\n%s", row)
		}
	}
}
