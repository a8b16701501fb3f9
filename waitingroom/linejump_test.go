package waitingroom

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// Line-jumping: nothing a client can put in a request gets it past a full room or
// ahead of the waiters who came before it.

// newRoomWith is newTestRoom with the handler's configuration in the test's hands (a
// secret, a shared name, a shared clock).
func newRoomWith(t testing.TB, configure func(h *Handler)) *testRoom {
	t.Helper()
	return newTestRoomWith(t, 1, configure)
}

// fill takes the room's only slot and queues n waiters behind it; it returns the
// admitted visitor's cookie and the waiters', head first.
func (tr *testRoom) fill(n int) (admitted string, waiters []string) {
	tr.t.Helper()
	if tr.h.Capacity != 1 {
		tr.t.Fatal("fill expects a room of capacity 1")
	}
	w, admitted := tr.visit("", "")
	if w.Body.String() != "upstream" {
		tr.t.Fatalf("the first visitor to an empty room was not admitted: %q", w.Body.String())
	}
	for i := 0; i < n; i++ {
		_, c := tr.visit("", "application/json")
		waiters = append(waiters, c)
	}
	return admitted, waiters
}

// tokenOf reads a cookie the room issued.
func (tr *testRoom) tokenOf(cookie string) token.Token {
	tr.t.Helper()
	tok, ok := tr.h.room.Keys().Open(cookie, tr.clock.Now())
	if !ok {
		tr.t.Fatalf("the room issued a cookie it cannot read: %q", cookie)
	}
	return tok
}

func (tr *testRoom) waiting() int {
	tr.t.Helper()
	st, err := tr.h.store.Stats(context.Background())
	if err != nil {
		tr.t.Fatal(err)
	}
	return st.Waiting
}

// turnedAway visits with cookie and fails unless the request was kept from the
// upstream and its sender put at the back of the queue under a fresh id.
func (tr *testRoom) turnedAway(cookie, what string) {
	tr.t.Helper()
	back := tr.waiting() + 1
	before := tr.passed.Load()
	w, issued := tr.visit(cookie, "application/json")
	if tr.passed.Load() != before {
		tr.t.Fatalf("%s got through a full room", what)
	}
	var v page.View
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Status != "queued" {
		tr.t.Fatalf("%s: expected a queued answer, got %d %q", what, w.Code, w.Body.String())
	}
	if v.Position != back {
		tr.t.Fatalf("%s was put at position %d, the back is %d", what, v.Position, back)
	}
	if issued == cookie {
		tr.t.Fatalf("%s was not given a cookie of its own", what)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func TestForgedCookiesNeverAdmit(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	admitted, _ := tr.fill(2)
	holder := tr.tokenOf(admitted).ID
	far := tr.clock.Now().Add(time.Hour)

	for i := 0; i < 200; i++ {
		tr.turnedAway(base64.RawURLEncoding.EncodeToString(randomBytes(token.Len)), "a cookie of random bytes")
		tr.turnedAway(base64.RawURLEncoding.EncodeToString(randomBytes(i)), "a cookie of random length")
	}
	// Correctly shaped tokens for the visitor that holds the slot, MACed with secrets
	// an attacker might guess. (The room's secret is random: none was configured.)
	for _, guess := range []string{"", "secret", "changeme", "waiting_room", tr.h.Name, tr.h.Cookie.Name, admitted} {
		forged := token.NewKeyring(tr.h.Name, [][]byte{[]byte(guess)}).
			Seal(token.Token{State: queue.Admitted, ID: holder, Since: tr.clock.Now(), Expires: far})
		tr.turnedAway(forged, "a token MACed with the guessed secret "+guess)
	}
	if w, _ := tr.visit(admitted, ""); w.Body.String() != "upstream" {
		t.Fatal("the real admitted cookie stopped working")
	}
}

// Rooms that share a secret (one secret in the config for every room is the easy
// thing to write) still do not honour each other's cookies.
func TestCookieFromAnotherRoomNeverAdmits(t *testing.T) {
	shared := func(h *Handler) { h.Secret = "one secret for every room of the site" }
	shop, tickets := newRoomWith(t, shared), newRoomWith(t, shared)
	shopAdmitted, shopWaiters := shop.fill(1)
	tickets.fill(3)

	tickets.turnedAway(shopAdmitted, "an admitted cookie of another room")
	tickets.turnedAway(shopWaiters[0], "the head waiter's cookie of another room")
	if w, _ := shop.visit(shopAdmitted, ""); w.Body.String() != "upstream" {
		t.Fatal("the cookie stopped working in its own room")
	}
}

func TestExpiredCookieNeverAdmits(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	admitted, waiters := tr.fill(2)
	keys := tr.h.room.Keys()
	now := tr.clock.Now()
	holder, head := tr.tokenOf(admitted), tr.tokenOf(waiters[0])

	// Signed by the room, for the visitor that holds the slot, but expired.
	for _, expires := range []time.Time{now, now.Add(-time.Second), time.Unix(0, 0)} {
		tr.turnedAway(keys.Seal(token.Token{State: queue.Admitted, ID: holder.ID, Since: holder.Since, Expires: expires}),
			"an expired admitted cookie")
		tr.turnedAway(keys.Seal(token.Token{State: queue.Queued, ID: head.ID, Since: head.Since, Expires: expires}),
			"the head waiter's expired cookie")
	}

	// The real cookie once its session_ttl has run out, before any admission step has
	// swept the session from the store (which still counts it as holding the slot).
	tr.clock.Advance(time.Duration(tr.h.SessionTTL))
	tr.turnedAway(admitted, "an admitted cookie past its expiry")
}

// Every single-bit change to a real cookie, in its bytes or in its text, makes a
// stranger: never admitted, never at the flipped waiter's place.
func TestBitFlippedCookieNeverAdmits(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	admitted, waiters := tr.fill(1)

	for _, real := range []struct{ what, cookie string }{
		{"the admitted cookie", admitted},
		{"the head waiter's cookie", waiters[0]},
	} {
		raw, err := base64.RawURLEncoding.DecodeString(real.cookie)
		if err != nil || len(raw) != token.Len {
			t.Fatalf("%s is not a token: %q", real.what, real.cookie)
		}
		for bit := 0; bit < 8*len(raw); bit++ {
			b := append([]byte(nil), raw...)
			b[bit/8] ^= 1 << (bit % 8)
			tr.turnedAway(base64.RawURLEncoding.EncodeToString(b), real.what+" with a bit flipped")
		}
		for bit := 0; bit < 8*len(real.cookie); bit++ {
			b := []byte(real.cookie)
			b[bit/8] ^= 1 << (bit % 8)
			tr.turnedAway(string(b), real.what+" with a bit of its text flipped")
		}
	}
	if w, _ := tr.visit(admitted, ""); w.Body.String() != "upstream" {
		t.Fatal("the real admitted cookie stopped working")
	}
	if v := tr.queued(waiters[0]); v.Position != 1 {
		t.Fatalf("the real head waiter is at %d", v.Position)
	}
}

// The visitor id is minted by the server. No header, query or cookie picks it, and a
// validly signed cookie for an id the server never issued is worth nothing.
func TestVisitorIDIsNeverChosenByTheClient(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	tr.fill(1)
	chosen := queue.NewVisitorID()
	keys := tr.h.room.Keys()
	now := tr.clock.Now()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		t.Fatal("a new visitor got through a full room")
		return nil
	})

	issued := map[queue.VisitorID]bool{}
	hint := chosen.String()
	for i := 0; i < 100; i++ {
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/?visitor="+hint+"&id="+hint+"&visitor_id="+hint, nil)
		r.Header.Set("Accept", "application/json")
		for _, name := range []string{"X-Visitor-Id", "Visitor-Id", "X-Waiting-Room-Visitor", "X-Request-Id"} {
			r.Header.Set(name, hint)
		}
		r.Header.Set("Cookie", "visitor="+hint+"; visitor_id="+hint+"; "+tr.h.Cookie.Name+"="+hint)
		w := httptest.NewRecorder()
		if err := tr.h.ServeHTTP(w, r, next); err != nil {
			t.Fatal(err)
		}
		var id queue.VisitorID
		for _, c := range w.Result().Cookies() {
			if c.Name == tr.h.Cookie.Name {
				id = tr.tokenOf(c.Value).ID
			}
		}
		if id == chosen || id == (queue.VisitorID{}) || issued[id] {
			t.Fatalf("request %d was given id %s (chosen %s, seen before %v)", i, id, chosen, issued[id])
		}
		issued[id] = true
	}

	// Even with the room's own signature (which a client cannot make), a queued or
	// admitted cookie for an id the store never issued is a new visitor at the back.
	for _, state := range []queue.State{queue.Queued, queue.Admitted} {
		forged := keys.Seal(token.Token{State: state, ID: chosen, Since: now.Add(-time.Hour), Expires: now.Add(time.Hour)})
		tr.turnedAway(forged, "a signed "+state.String()+" cookie for an id the server never issued")
		if st, _ := tr.h.store.Status(context.Background(), chosen, now); st.State != queue.Unknown {
			t.Fatalf("the store took the client's id: %+v", st)
		}
	}
}

// Losing (or dropping) the cookie does not keep the place: the visitor starts again at
// the back, and the old place is not handed to the new visit.
func TestRejoinWithoutCookieGoesToTheBack(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	_, waiters := tr.fill(5)
	for i := 0; i < 3; i++ {
		tr.turnedAway("", "a waiter that dropped its cookie")
	}
	if v := tr.queued(waiters[1]); v.Position != 2 {
		t.Fatalf("the old place moved to %d", v.Position)
	}
}

// A cookie signed with an old secret keeps its place (or slot) while the new config
// lists that secret in previous_secrets, and not once it is gone from the list.
func TestPreviousSecretsDuringRotation(t *testing.T) {
	name := "rotation-" + queue.NewVisitorID().String()[:8]
	clk := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	const oldKey, newKey = "the old secret, 32 bytes or longer", "the new secret, 32 bytes or longer"
	config := func(secret string, previous ...string) func(h *Handler) {
		return func(h *Handler) {
			h.Name, h.clock, h.Secret, h.PreviousSecrets = name, clk, secret, previous
		}
	}
	old := newRoomWith(t, config(oldKey))
	admitted, waiters := old.fill(2)

	// A reload that rotates: the same room (and store), the old secret listed.
	rotating := newRoomWith(t, config(newKey, oldKey))
	w, reissued := rotating.visit(admitted, "")
	if w.Body.String() != "upstream" {
		t.Fatalf("an admitted visitor with an old-secret cookie was stopped during rotation: %q", w.Body.String())
	}
	newOnly := token.NewKeyring(name, [][]byte{[]byte(newKey)})
	if _, ok := newOnly.Open(reissued, clk.Now()); !ok {
		t.Fatal("the cookie reissued during rotation is not signed with the new secret")
	}
	if v := rotating.queued(waiters[0]); v.Position != 1 {
		t.Fatalf("the head waiter's old-secret cookie is at %d during rotation, want 1", v.Position)
	}

	// Once the old secret is dropped from the list, its cookies are strangers.
	rotated := newRoomWith(t, config(newKey))
	rotated.turnedAway(admitted, "an admitted cookie signed with a retired secret")
	rotated.turnedAway(waiters[1], "a waiter's cookie signed with a retired secret")
	if w, _ := rotated.visit(reissued, ""); w.Body.String() != "upstream" {
		t.Fatalf("the cookie reissued under the new secret was stopped: %q", w.Body.String())
	}
}
