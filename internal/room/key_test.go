package room

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// callCounter is a real memory store that counts the calls a decision makes of it.
type callCounter struct {
	queue.Store
	calls atomic.Int64
}

func (c *callCounter) Join(ctx context.Context, id queue.VisitorID, now time.Time, lim queue.Limits) (queue.Status, error) {
	c.calls.Add(1)
	return c.Store.Join(ctx, id, now, lim)
}

func (c *callCounter) JoinPass(ctx context.Context, id queue.VisitorID, p queue.PassUse, now time.Time, lim queue.Limits) (queue.Status, bool, error) {
	c.calls.Add(1)
	return c.Store.JoinPass(ctx, id, p, now, lim)
}

func (c *callCounter) Status(ctx context.Context, id queue.VisitorID, now time.Time) (queue.Status, error) {
	c.calls.Add(1)
	return c.Store.Status(ctx, id, now)
}

func (c *callCounter) Touch(ctx context.Context, id queue.VisitorID, now time.Time) (bool, error) {
	c.calls.Add(1)
	return c.Store.Touch(ctx, id, now)
}

func (c *callCounter) Leave(ctx context.Context, id queue.VisitorID) (bool, error) {
	c.calls.Add(1)
	return c.Store.Leave(ctx, id)
}

func (c *callCounter) Once(ctx context.Context, key string, until time.Time) (bool, error) {
	c.calls.Add(1)
	return c.Store.Once(ctx, key, until)
}

// joinCounts counts what the room reports of its joins.
type joinCounts struct {
	noMetrics
	admitted, queued atomic.Int64
}

func (m *joinCounts) Admitted(n int) { m.admitted.Add(int64(n)) }
func (m *joinCounts) Queued()        { m.queued.Add(1) }

// keyedRoom is a test room with a call-counting store and counted joins.
type keyedRoom struct {
	*Room
	clk     *testClock
	store   *callCounter
	metrics *joinCounts
}

func newKeyedRoom(t *testing.T, capacity int, configure func(*Config)) keyedRoom {
	t.Helper()
	store := &callCounter{Store: queue.NewMemoryStore()}
	metrics := &joinCounts{}
	rm, clk := newTestRoom(t, capacity, func(c *Config) {
		c.Store, c.Metrics = store, metrics
		if configure != nil {
			configure(c)
		}
	})
	return keyedRoom{rm, clk, store, metrics}
}

func (k keyedRoom) decide(v Visit) Decision {
	if v.Now.IsZero() {
		v.Now = k.clk.Now()
	}
	var d Decision
	k.Decide(context.Background(), &v, &d)
	return d
}

func (k keyedRoom) stats(t *testing.T) queue.Stats {
	t.Helper()
	st, err := k.cfg.Store.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// fill admits capacity unkeyed visitors.
func (k keyedRoom) fill(t *testing.T, capacity int) {
	t.Helper()
	for range capacity {
		if d := k.decide(Visit{}); d.Outcome != Admitted {
			t.Fatalf("filling the room: %v, want admitted", d.Outcome)
		}
	}
}

// Two devices of one key, behind a full room, hold one place: the second sees the
// first's position and ticket, and nothing is counted twice.
func TestKeyTwoDevicesOnePlace(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	k.fill(t, 1)
	laptop := k.decide(Visit{Key: "alice"})
	phone := k.decide(Visit{Key: "alice"})
	bob := k.decide(Visit{Key: "bob"})
	if laptop.Outcome != Queued || phone.Outcome != Queued || bob.Outcome != Queued {
		t.Fatalf("outcomes %v %v %v, want all queued", laptop.Outcome, phone.Outcome, bob.Outcome)
	}
	if phone.Visitor != laptop.Visitor || phone.Status.Ticket != laptop.Status.Ticket || phone.Status.Position != 1 {
		t.Fatalf("the phone is %v with ticket %d at %d; the laptop %v with ticket %d at 1",
			phone.Visitor, phone.Status.Ticket, phone.Status.Position, laptop.Visitor, laptop.Status.Ticket)
	}
	if bob.Visitor == laptop.Visitor || bob.Status.Position != 2 {
		t.Fatalf("another key: %v at %d, want its own place at 2", bob.Visitor, bob.Status.Position)
	}
	if st := k.stats(t); st.Waiting != 2 {
		t.Fatalf("%d waiting, want 2 (alice once, bob)", st.Waiting)
	}
	if n := k.metrics.queued.Load(); n != 2 {
		t.Fatalf("%d joins counted as queued, want 2", n)
	}
	// The phone's cookie is the place: its page loads as the laptop's do.
	again := k.decide(Visit{Key: "alice", Cookie: string(phone.Cookie())})
	if again.Outcome != Queued || again.Visitor != laptop.Visitor || again.Status.Position != 1 {
		t.Fatalf("the phone again with its cookie: %v %v at %d", again.Outcome, again.Visitor, again.Status.Position)
	}
}

// Two devices of one key share one admitted session: the second is let in on the
// first's slot, counted once.
func TestKeyTwoDevicesOneSession(t *testing.T) {
	k := newKeyedRoom(t, 2, nil)
	laptop := k.decide(Visit{Key: "alice"})
	if laptop.Outcome != Admitted {
		t.Fatalf("the laptop: %v, want admitted", laptop.Outcome)
	}
	k.forgetTouched(laptop.Visitor) // as on another instance: the store must say
	phone := k.decide(Visit{Key: "alice"})
	if phone.Outcome != Admitted || phone.Visitor != laptop.Visitor || phone.Cookie() == nil {
		t.Fatalf("the phone: %v as %v, want admitted as %v with a cookie", phone.Outcome, phone.Visitor, laptop.Visitor)
	}
	if st := k.stats(t); st.Active != 1 || st.AdmittedTotal != 1 {
		t.Fatalf("stats %+v, want one active, one admission", st)
	}
	if n := k.metrics.admitted.Load(); n != 1 {
		t.Fatalf("%d admissions counted, want 1", n)
	}
	// The room still has a slot: another key takes it.
	if d := k.decide(Visit{Key: "bob"}); d.Outcome != Admitted {
		t.Fatalf("another key: %v, want admitted", d.Outcome)
	}
}

// A keyed new arrival is one store call, as an unkeyed one is; a device of a key
// this instance let in within TouchEvery costs none.
func TestKeyNewArrivalIsOneStoreCall(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	for _, tc := range []struct {
		name  string
		visit Visit
		want  Outcome
		calls int64
	}{
		{"unkeyed, admitted", Visit{}, Admitted, 1},
		{"keyed, queued", Visit{Key: "alice"}, Queued, 1},
		{"unkeyed, queued", Visit{}, Queued, 1},
		{"keyed, another device of a waiter", Visit{Key: "alice"}, Queued, 1},
	} {
		before := k.store.calls.Load()
		d := k.decide(tc.visit)
		if got := k.store.calls.Load() - before; d.Outcome != tc.want || got != tc.calls {
			t.Errorf("%s: %v after %d store calls, want %v after %d", tc.name, d.Outcome, got, tc.want, tc.calls)
		}
	}

	k2 := newKeyedRoom(t, 1, nil)
	k2.decide(Visit{Key: "carol"})
	before := k2.store.calls.Load()
	if d := k2.decide(Visit{Key: "carol"}); d.Outcome != Admitted || k2.store.calls.Load() != before {
		t.Errorf("a second device of a visitor this instance just let in: %v after %d store calls, want admitted after none",
			d.Outcome, k2.store.calls.Load()-before)
	}
}

// A cookie of another key is not honoured for the key: the request is the key's
// visitor, and the cookie's place is left as it was. That holds for a key's cookie
// renewed on a request without the key (logged out, or a route the key is not set
// on): the cookie still says it is a key's, so it never follows another log-in
// (login_test.go has the unkeyed cookie, which does).
func TestKeyForeignCookieIgnored(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	k.fill(t, 1)
	alice := k.decide(Visit{Key: "alice"})
	renewed := k.decide(Visit{Cookie: string(alice.Cookie())}) // alice, logged out
	if renewed.Outcome != Queued || renewed.Visitor != alice.Visitor || renewed.Cookie() == nil {
		t.Fatalf("alice logged out: %v as %v, want queued as %v with a cookie", renewed.Outcome, renewed.Visitor, alice.Visitor)
	}
	for i, tc := range []struct {
		name   string
		key    string
		cookie []byte
	}{{"alice's cookie", "bob", alice.Cookie()}, {"alice's cookie renewed without her key", "carol", renewed.Cookie()}} {
		d := k.decide(Visit{Key: tc.key, Cookie: string(tc.cookie)})
		if d.Outcome != Queued || d.Visitor == alice.Visitor {
			t.Fatalf("%s with %s: %v as %v; alice is %v", tc.key, tc.name, d.Outcome, d.Visitor, alice.Visitor)
		}
		if d.Status.Position != 2+i {
			t.Fatalf("%s with %s at %d, want a place of their own at %d", tc.key, tc.name, d.Status.Position, 2+i)
		}
	}
	if d := k.decide(Visit{Key: "alice"}); d.Visitor != alice.Visitor || d.Status.Position != 1 {
		t.Fatalf("alice after others presented her cookie: %v at %d, want hers at 1", d.Visitor, d.Status.Position)
	}
	// Where the key resolves empty the visitor is the cookie's, as without a key.
	plain := k.decide(Visit{})
	if d := k.decide(Visit{Key: "", Cookie: string(plain.Cookie())}); d.Visitor != plain.Visitor || d.Keyed {
		t.Fatalf("an empty key with a cookie: %v (keyed %v), want the cookie's %v", d.Visitor, d.Keyed, plain.Visitor)
	}
	if st := k.stats(t); st.Waiting != 4 {
		t.Fatalf("%d waiting, want 4 (alice, bob, carol, the unkeyed)", st.Waiting)
	}
}

// Hostile keys. One longer than token.MaxKey is refused, not cut into another's place,
// and leaves no trace; odd bytes are just bytes, each key its own visitor.
func TestKeyBadInput(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	k.fill(t, 1)
	long := strings.Repeat("a", token.MaxKey)
	atMax := k.decide(Visit{Key: long})
	if atMax.Outcome != Queued {
		t.Fatalf("a key of %d bytes: %v, want queued", token.MaxKey, atMax.Outcome)
	}
	before, calls := k.stats(t), k.store.calls.Load()
	for _, key := range []string{long + "b", long + "a", strings.Repeat("x", 1<<20)} {
		d := k.decide(Visit{Key: key, Cookie: string(atMax.Cookie())})
		if d.Outcome != KeyTooLong || !d.Keyed || d.Cookie() != nil {
			t.Fatalf("a key of %d bytes: %v (cookie %q), want refused, no cookie", len(key), d.Outcome, d.Cookie())
		}
	}
	if after := k.stats(t); after != before || k.store.calls.Load() != calls {
		t.Fatalf("refused keys changed the store (%+v, was %+v) or called it", after, before)
	}

	odd := []string{"\x00", "\x00\x00", "alice\x00", "alice", "alice\n", "alice\r\nX-Evil: 1", "\xff\xfe\xfd", "\xc3", "e\u0301", "\u00e9"}
	seen := map[queue.VisitorID]string{}
	for _, key := range odd {
		d := k.decide(Visit{Key: key})
		if d.Outcome != Queued {
			t.Fatalf("key %q: %v, want queued", key, d.Outcome)
		}
		if other, dup := seen[d.Visitor]; dup {
			t.Fatalf("keys %q and %q are one visitor", other, key)
		}
		seen[d.Visitor] = key
		if again := k.decide(Visit{Key: key}); again.Visitor != d.Visitor {
			t.Fatalf("key %q is two visitors", key)
		}
	}
	if st := k.stats(t); st.Waiting != 1+len(odd) {
		t.Fatalf("%d waiting, want %d", st.Waiting, 1+len(odd))
	}
}

// With proof_of_work on, a key that holds a place is not challenged again for it on
// another device; a key that holds none is.
func TestKeyHoldingAPlaceIsNotChallenged(t *testing.T) {
	k := newKeyedRoom(t, 1, func(c *Config) { c.ProofOfWork = 8 })
	pass := k.keys.Load().MintPass(token.NewPass(k.clk.Now().Add(time.Hour), 5))
	k.decide(Visit{Pass: pass}) // fills the room (a pass stands for the proof)
	laptop := k.decide(Visit{Key: "alice", Pass: pass})
	if laptop.Outcome != Queued {
		t.Fatalf("alice with a pass: %v, want queued", laptop.Outcome)
	}
	phone := k.decide(Visit{Key: "alice"})
	if phone.Outcome != Queued || phone.Visitor != laptop.Visitor || phone.Status.Position != 1 {
		t.Fatalf("alice's phone, no proof: %v as %v at %d, want her place", phone.Outcome, phone.Visitor, phone.Status.Position)
	}
	if d := k.decide(Visit{Key: "bob"}); d.Outcome != Challenged {
		t.Fatalf("a key holding no place, no proof: %v, want challenged", d.Outcome)
	}
}

// In invite_only mode a key let in with a pass shares its session with its other
// devices, which come without the pass; a key never invited is turned away.
func TestKeyInviteOnly(t *testing.T) {
	k := newKeyedRoom(t, 2, func(c *Config) { c.Mode = queue.ModeInviteOnly })
	pass := k.keys.Load().MintPass(token.NewPass(k.clk.Now().Add(time.Hour), 1))
	laptop := k.decide(Visit{Key: "alice", Pass: pass})
	if laptop.Outcome != Admitted {
		t.Fatalf("alice with a pass: %v, want admitted", laptop.Outcome)
	}
	k.forgetTouched(laptop.Visitor)
	if d := k.decide(Visit{Key: "alice"}); d.Outcome != Admitted || d.Visitor != laptop.Visitor {
		t.Fatalf("alice's phone without the pass: %v, want admitted as her", d.Outcome)
	}
	if d := k.decide(Visit{Key: "bob"}); d.Outcome != Rejected {
		t.Fatalf("bob, never invited: %v, want rejected", d.Outcome)
	}
}

// A key that holds a place is not refused by its address's max_joins_per_ip (the
// laptop and the phone behind one home router) nor counted again against it.
func TestKeyPerAddressCap(t *testing.T) {
	k := newKeyedRoom(t, 1, func(c *Config) { c.PerIP = PerIP{MaxJoins: 2, JoinWindow: time.Minute} })
	k.fill(t, 1)
	const home = "192.0.2.7"
	laptop := k.decide(Visit{Key: "alice", Addr: home})
	if laptop.Outcome != Queued {
		t.Fatalf("alice's laptop: %v, want queued", laptop.Outcome)
	}
	if d := k.decide(Visit{Key: "alice", Addr: home}); d.Outcome != Queued || d.Visitor != laptop.Visitor {
		t.Fatalf("alice's phone: %v, want her place", d.Outcome)
	}
	if d := k.decide(Visit{Key: "bob", Addr: home}); d.Outcome != Queued {
		t.Fatalf("bob at the same address, the second join: %v, want queued (alice's phone was not counted)", d.Outcome)
	}
	if d := k.decide(Visit{Key: "alice", Addr: home}); d.Outcome != Queued || d.Visitor != laptop.Visitor {
		t.Fatalf("alice's tablet, the address at its cap: %v, want her place", d.Outcome)
	}
	if d := k.decide(Visit{Key: "carol", Addr: home}); d.Outcome != TooMany {
		t.Fatalf("carol at the same address over its cap: %v, want refused", d.Outcome)
	}
}

// A keyed session that reached session_max is not begun again by presenting the key
// on another device: the store ended it, and the key's visitor joins the back.
func TestKeySessionMaxNotRenewedByAnotherDevice(t *testing.T) {
	k := newKeyedRoom(t, 1, func(c *Config) { c.SessionMax = 2 * time.Minute })
	ctx := context.Background()
	laptop := k.decide(Visit{Key: "alice"})
	if laptop.Outcome != Admitted {
		t.Fatalf("alice: %v, want admitted", laptop.Outcome)
	}
	bob := k.decide(Visit{Key: "bob"})
	k.clk.set(k.clk.Now().Add(2*time.Minute + time.Second))
	k.tick(ctx) // the store ends alice's session, bob goes in
	if d := k.decide(Visit{Key: "bob", Cookie: string(bob.Cookie())}); d.Outcome != Admitted {
		t.Fatalf("bob after alice's session_max: %v, want admitted", d.Outcome)
	}
	phone := k.decide(Visit{Key: "alice"})
	if phone.Outcome != Queued {
		t.Fatalf("alice's phone after her session_max: %v, want queued behind bob's session", phone.Outcome)
	}
}

// With arrive_ttl, the key's other device is its arrival: a waiter admitted from the
// line who comes in on the phone keeps the slot.
func TestKeyAnotherDeviceArrives(t *testing.T) {
	k := newKeyedRoom(t, 1, func(c *Config) {
		c.ArriveTTL, c.SessionTTL = time.Minute, 5*time.Minute
		c.AwayTTL = 10 * time.Minute
	})
	ctx := context.Background()
	holder := k.decide(Visit{})
	laptop := k.decide(Visit{Key: "alice"})
	if laptop.Outcome != Queued {
		t.Fatalf("alice: %v, want queued", laptop.Outcome)
	}
	k.Revoke(ctx, holder.Visitor)
	k.tick(ctx)
	if st, _ := k.cfg.Store.Status(ctx, laptop.Visitor, k.clk.Now()); st.State != queue.Admitted {
		t.Fatalf("alice after the slot freed: %v, want admitted", st.State)
	}
	if d := k.decide(Visit{Key: "alice"}); d.Outcome != Admitted {
		t.Fatalf("alice's phone: %v, want admitted", d.Outcome)
	}
	k.clk.set(k.clk.Now().Add(2 * time.Minute))
	k.tick(ctx)
	if st, _ := k.cfg.Store.Status(ctx, laptop.Visitor, k.clk.Now()); st.State != queue.Admitted {
		t.Fatalf("alice past arrive_ttl after arriving on the phone: %v, want still admitted", st.State)
	}
}
