package draw

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var testSecret = []byte("a secret of thirty-two bytes!!!!")

// The bytes a receipt is signed over, exactly: members sorted, no whitespace, no
// signature; place and commitment only when the receipt has them.
func TestCanonicalBytes(t *testing.T) {
	r := Receipt{Room: "shop", Draw: "event-1", Commitment: "sha256:" + strings.Repeat("ab", 32),
		Entry: Entry{0xde, 0xad}, Ticket: 17, Issued: time.Date(2031, 6, 1, 9, 0, 5, 999, time.FixedZone("x", 3600)), Place: 4}
	got, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"commitment":"sha256:` + strings.Repeat("ab", 32) + `","draw":"event-1","entry":"dead0000000000000000000000000000",` +
		`"issued":"2031-06-01T08:00:05Z","place":4,"room":"shop","ticket":17}`
	if string(got) != want {
		t.Fatalf("canonical\n%s\nwant\n%s", got, want)
	}
	fifo := Receipt{Room: "shop", Draw: FIFO, Entry: Entry{1}, Ticket: 0, Issued: time.Unix(0, 0)}
	got, err = fifo.Canonical()
	if want := `{"draw":"fifo","entry":"01000000000000000000000000000000","issued":"1970-01-01T00:00:00Z","room":"shop","ticket":0}`; err != nil || string(got) != want {
		t.Fatalf("FIFO canonical %s, %v; want %s", got, err, want)
	}
}

// The canonical string is RFC 8785's, which is encoding/json's with HTML escaping
// off except for U+2028 and U+2029 (which encoding/json escapes and RFC 8785,
// JSON.stringify and Python leave as they are), and it reads back as the string.
func TestCanonicalStringsAreRFC8785(t *testing.T) {
	for _, s := range []string{
		"shop", "", "a\"b\\c/d", "<&>", "\b\f\n\r\t", "\x00\x01\x1f\x7f", "é ß 中 😀", "line\u2028para\u2029",
	} {
		got := appendString(nil, s)
		var lib bytes.Buffer
		enc := json.NewEncoder(&lib)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(lib.String(), "\n")
		want = strings.ReplaceAll(strings.ReplaceAll(want, `\u2028`, "\u2028"), `\u2029`, "\u2029")
		if string(got) != want {
			t.Errorf("%q: canonical %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("%q: canonical %s reads back as %q, %v", s, got, back, err)
		}
	}
}

// A receipt given out reads back as itself, in any layout.
func TestReceiptReadsBack(t *testing.T) {
	s, err := NewSigner("shop ☂\u2028\"", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Sign(Receipt{Room: "shop ☂\u2028\"", Draw: "event-2031-06-01T09:00:00Z", Commitment: NewSeed().Commitment(),
		Entry: NewEntry(), Ticket: MaxSafe, Issued: time.Now(), Place: 1})
	if err != nil {
		t.Fatal(err)
	}
	text := mustJSON(t, r)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, text, "", "  "); err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]byte{text, pretty.Bytes()} {
		back, err := ParseReceipt(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if back != r {
			t.Fatalf("read back %+v, want %+v", back, r)
		}
	}
}

// Every instance that shares the room's secret signs alike, with the key the docs
// give: HKDF-SHA256(secret, no salt, "waiting_room receipt key" 0x00 room), written
// out here with HMAC alone (RFC 5869) so a change of the derivation fails.
func TestEveryInstanceSignsWithTheDocumentedKey(t *testing.T) {
	hmacOf := func(key, msg []byte) []byte {
		h := hmac.New(sha256.New, key)
		h.Write(msg)
		return h.Sum(nil)
	}
	prk := hmacOf(make([]byte, sha256.Size), testSecret)
	seed := hmacOf(prk, append([]byte("waiting_room receipt key\x00shop"), 1))
	want := base64.RawURLEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))

	one, err := NewSigner("shop", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := NewSigner("shop", append([]byte(nil), testSecret...))
	if one.PublicKey() != want || two.PublicKey() != want {
		t.Fatalf("public keys %s and %s, want %s", one.PublicKey(), two.PublicKey(), want)
	}
	r := Receipt{Room: "shop", Draw: FIFO, Entry: Entry{9}, Ticket: 3, Issued: time.Unix(1_900_000_000, 0)}
	a, _ := one.Sign(r)
	b, _ := two.Sign(r)
	if a.Signature != b.Signature {
		t.Fatal("two instances of the room sign one receipt differently")
	}
	// Apart from the cookie's MAC, which keys HMAC with the secret itself.
	if bytes.Equal(seed, hmacOf(testSecret, []byte("waiting_room\x00shop\x00"))) {
		t.Fatal("the receipt key is a MAC the room gives out")
	}
}

// Rooms sharing a secret, and one room under two secrets, sign with different keys.
func TestTheKeyIsTheRoomsAndTheSecrets(t *testing.T) {
	keys := map[string]string{}
	for _, c := range []struct {
		room   string
		secret string
	}{{"shop", "one secret of thirty-two bytes!!"}, {"shop2", "one secret of thirty-two bytes!!"}, {"shop", "two secret of thirty-two bytes!!"}} {
		s, err := NewSigner(c.room, []byte(c.secret))
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := keys[s.PublicKey()]; ok {
			t.Fatalf("%s under %q has the key of %s", c.room, c.secret, prev)
		}
		keys[s.PublicKey()] = c.room + " " + c.secret
	}
	if _, err := NewSigner("shop", nil); err == nil {
		t.Fatal("a signer without a secret")
	}
	if _, err := NewSigner(strings.Repeat("x", MaxRoom+1), testSecret); err == nil {
		t.Fatal("a signer for a room name a receipt cannot hold")
	}
	s, _ := NewSigner("shop", testSecret)
	if _, err := s.Sign(Receipt{Room: "shop2", Draw: FIFO, Issued: time.Now()}); err == nil {
		t.Fatal("a receipt of another room signed")
	}
}

// Receipts a room never gives out are not signed.
func TestSignRefusesWhatNoRoomGivesOut(t *testing.T) {
	s, _ := NewSigner("shop", testSecret)
	c := NewSeed().Commitment()
	now := time.Now()
	for name, r := range map[string]Receipt{
		"no draw":               {Room: "shop", Commitment: c, Issued: now},
		"draw id with a slash":  {Room: "shop", Draw: "a/b", Commitment: c, Issued: now},
		"draw id too long":      {Room: "shop", Draw: strings.Repeat("d", MaxDraw+1), Commitment: c, Issued: now},
		"no commitment":         {Room: "shop", Draw: "e", Issued: now},
		"FIFO with commitment":  {Room: "shop", Draw: FIFO, Commitment: c, Issued: now},
		"FIFO with a place":     {Room: "shop", Draw: FIFO, Place: 1, Issued: now},
		"ticket past 2^53":      {Room: "shop", Draw: "e", Commitment: c, Ticket: MaxSafe + 1, Issued: now},
		"place past 2^53":       {Room: "shop", Draw: "e", Commitment: c, Place: MaxSafe + 1, Issued: now},
		"no time":               {Room: "shop", Draw: "e", Commitment: c},
		"commitment upper case": {Room: "shop", Draw: "e", Commitment: strings.ToUpper(c), Issued: now},
	} {
		if _, err := s.Sign(r); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
}

// A receipt is refused, with what was wrong, when it is not one a room gives out;
// never accepted with a member ignored or its last copy believed.
func TestParseReceiptRefuses(t *testing.T) {
	s, _ := NewSigner("shop", testSecret)
	r, err := s.Sign(Receipt{Room: "shop", Draw: "e1", Commitment: NewSeed().Commitment(), Entry: NewEntry(), Ticket: 5, Issued: time.Now(), Place: 2})
	if err != nil {
		t.Fatal(err)
	}
	good := string(mustJSON(t, r))
	inner := strings.TrimSuffix(strings.TrimPrefix(good, "{"), "}")
	swap := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("%q is not in %s", old, good)
		}
		return strings.Replace(good, old, new, 1)
	}
	for _, c := range []struct {
		name, in string
		want     error
		says     string
	}{
		{"empty", "", ErrMalformed, "cut short"},
		{"not an object", "[]", ErrMalformed, "not a JSON object"},
		{"null", "null", ErrMalformed, "not a JSON object"},
		{"unknown member", `{"admitted":true,` + inner + `}`, ErrMalformed, `no member "admitted"`},
		{"a member in another case", swap(`"room"`, `"Room"`), ErrMalformed, `no member "Room"`},
		{"a member twice", `{"place":1,` + inner + `}`, ErrMalformed, `"place" is given twice`},
		{"a member twice, escaped", `{"pl\u0061ce":1,` + inner + `}`, ErrMalformed, `"place" is given twice`},
		{"missing signature", swap(`,"signature":"`+r.Signature+`"`, ""), ErrMalformed, "signature is missing"},
		{"missing entry", swap(`"entry":"`+r.Entry.String()+`",`, ""), ErrMalformed, "entry is missing"},
		{"ticket as text", swap(`"ticket":5`, `"ticket":"5"`), ErrMalformed, "ticket must be a number"},
		{"ticket as a fraction", swap(`"ticket":5`, `"ticket":5.0`), ErrMalformed, "whole number"},
		{"ticket with an exponent", swap(`"ticket":5`, `"ticket":5e0`), ErrMalformed, "whole number"},
		{"ticket below zero", swap(`"ticket":5`, `"ticket":-5`), ErrMalformed, "whole number"},
		{"ticket with a leading zero", swap(`"ticket":5`, `"ticket":05`), ErrMalformed, ""},
		{"ticket past 2^53", swap(`"ticket":5`, `"ticket":9007199254740992`), ErrMalformed, "whole number"},
		{"place 0", swap(`"place":2`, `"place":0`), ErrMalformed, "place starts at 1"},
		{"room as an object", swap(`"room":"shop"`, `"room":{}`), ErrMalformed, "room must be a string"},
		{"entry in upper case", swap(r.Entry.String(), strings.ToUpper(r.Entry.String())), ErrMalformed, "entry id"},
		{"issued with fractions", swap(`Z"`, `.0Z"`), ErrMalformed, "issued"},
		{"issued with an offset", swap(`Z"`, `+00:00"`), ErrMalformed, "issued"},
		{"signature cut", swap(r.Signature, r.Signature[:85]), ErrMalformed, "86 characters"},
		{"cut", good[:len(good)-1], ErrMalformed, "cut short"},
		{"two objects", good + good, ErrMalformed, "more after the object"},
		{"trailing comma", good + ",", ErrMalformed, "more after the object"},
		{"not UTF-8", swap(`"room":"shop"`, "\"room\":\"sh\xffop\""), ErrMalformed, "not UTF-8"},
		{"a lone surrogate", swap(`"room":"shop"`, `"room":"sh\ud800op"`), ErrMalformed, "unpaired surrogate"},
		{"a byte-order mark", "\ufeff" + good, ErrMalformed, ""},
		{"oversized", good + strings.Repeat(" ", MaxReceipt), ErrTooLarge, "at most 8192 bytes"},
	} {
		_, err := ParseReceipt([]byte(c.in))
		if !errors.Is(err, c.want) || !strings.Contains(fmtErr(err), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func mustJSON(t testing.TB, r Receipt) []byte {
	t.Helper()
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
