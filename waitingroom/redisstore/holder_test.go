package redisstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// holderRoom is one room on a real Redis seen through two instances (two stores, as
// two caddy processes open it), with a clock the test moves.
type holderRoom struct {
	t    *testing.T
	a, b *roomStore
	lim  queue.Limits
	t0   time.Time
}

func newHolderRoom(t *testing.T) *holderRoom {
	t.Helper()
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	a := open(t, mod)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	twin, release, err := mod.OpenStore(ctx, a.roomName())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return &holderRoom{t: t, a: a, b: twin.(*roomStore), t0: time.Unix(1_800_000_000, 0),
		lim: queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Minute, AwayTTL: 10 * time.Minute}}
}

func (h *holderRoom) at(d time.Duration) time.Time { return h.t0.Add(d) }

// queue fills the only slot and queues n waiters at t0, each heard from once after
// joining, as a page's first poll or socket is: a place never heard from after its
// first answer is not kept away at all, and these tests are about the ones that are.
func (h *holderRoom) queue(n int) []queue.VisitorID {
	h.t.Helper()
	ids := make([]queue.VisitorID, n+1)
	for i := range ids {
		ids[i] = queue.NewVisitorID()
		if _, err := h.a.Join(context.Background(), ids[i], h.t0, h.lim); err != nil {
			h.t.Fatal(err)
		}
		if i > 0 {
			if _, err := h.a.Status(context.Background(), ids[i], h.t0); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	return ids[1:]
}

func (h *holderRoom) hold(s *roomStore, at time.Duration, ids ...queue.VisitorID) {
	h.t.Helper()
	if err := s.Hold(context.Background(), ids, h.at(at)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *holderRoom) release(s *roomStore, at time.Duration, ids ...queue.VisitorID) {
	h.t.Helper()
	if err := s.Release(context.Background(), ids, h.at(at)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *holderRoom) step(at time.Duration) {
	h.t.Helper()
	if _, err := h.a.Step(context.Background(), h.at(at), h.lim); err != nil {
		h.t.Fatal(err)
	}
}

// present lists which of ids are present (have a position).
func (h *holderRoom) present(at time.Duration, ids []queue.VisitorID) []bool {
	h.t.Helper()
	tickets := make([]uint64, len(ids))
	for i, id := range ids {
		// Status would hear the waiter; the ticket is what the join gave, read without.
		score, err := h.a.shared.client.ZScore(context.Background(), h.a.keys[0], string(id[:])).Result()
		if err != nil {
			h.t.Fatalf("waiter %d has no ticket: %v", i, err)
		}
		tickets[i] = uint64(score)
	}
	out := make([]int, len(ids))
	if err := h.a.Positions(context.Background(), tickets, out); err != nil {
		h.t.Fatal(err)
	}
	got := make([]bool, len(ids))
	for i, p := range out {
		got[i] = p > 0
	}
	return got
}

func (h *holderRoom) wantPresent(at time.Duration, ids []queue.VisitorID, want ...bool) {
	h.t.Helper()
	got := h.present(at, ids)
	if slices.Equal(got, want) {
		return
	}
	first, wrong := -1, 0
	for i := range got {
		if got[i] != want[i] {
			wrong++
			if first < 0 {
				first = i
			}
		}
	}
	h.t.Fatalf("at %v %d of %d waiters are not as expected; the first is waiter %d: present %v, want %v",
		at, wrong, len(ids), first, got[first], want[first])
}

// A waiter held by a live instance stays present without a word of its own; one not
// held goes away at queue_ttl.
func TestHeldWaiterStaysPresent(t *testing.T) {
	h := newHolderRoom(t)
	w := h.queue(2)
	h.hold(h.a, 0, w[0])
	for s := 20 * time.Second; s <= 5*time.Minute; s += 20 * time.Second {
		h.hold(h.a, s) // the lease, renewed with no ids
		h.step(s + time.Second)
	}
	h.wantPresent(5*time.Minute, w, true, false)
}

// A released waiter is heard from when released, and away queue_ttl after that.
func TestReleasedWaiterGoesAway(t *testing.T) {
	h := newHolderRoom(t)
	w := h.queue(2)
	h.hold(h.a, 0, w[0], w[1])
	h.release(h.a, 20*time.Second, w[0])
	for s := 10 * time.Second; s <= 90*time.Second; s += 10 * time.Second {
		h.hold(h.a, s)
	}
	h.step(80*time.Second - time.Millisecond)
	h.wantPresent(80*time.Second, w, true, true)
	h.step(80 * time.Second)
	h.wantPresent(80*time.Second, w, false, true)
}

// When an instance stops renewing (it died), its waiters go away queue_ttl after the
// last renewal, not later.
func TestDeadInstancesWaitersGoAway(t *testing.T) {
	h := newHolderRoom(t)
	w := h.queue(1)
	h.hold(h.a, 0, w[0])
	h.hold(h.a, 30*time.Second) // the last renewal
	h.hold(h.b, 60*time.Second) // another instance lives on, holding nobody
	h.step(90*time.Second - time.Millisecond)
	h.wantPresent(90*time.Second, w, true)
	h.step(90 * time.Second)
	h.wantPresent(90*time.Second, w, false)
}

// A waiter whose socket moved to another instance stays held by that one: the first
// instance letting go does not end the second's hold.
func TestHoldMovesToAnotherInstance(t *testing.T) {
	h := newHolderRoom(t)
	w := h.queue(1)
	h.hold(h.a, 0, w[0])
	h.hold(h.b, 5*time.Second, w[0])
	h.release(h.a, 10*time.Second, w[0])
	for s := 20 * time.Second; s <= 3*time.Minute; s += 20 * time.Second {
		h.hold(h.b, s)
		h.step(s + time.Second)
	}
	h.wantPresent(3*time.Minute, w, true)
}

// A held waiter that went away (its instance was cut off) is back when held again.
func TestHoldBringsBackAnAwayWaiter(t *testing.T) {
	h := newHolderRoom(t)
	w := h.queue(3)
	h.hold(h.a, 0, w[0], w[1]) // their sockets, on an instance that is then cut off
	h.hold(h.b, 90*time.Second, w[2])
	h.step(2 * time.Minute)
	h.wantPresent(2*time.Minute, w, false, false, true)
	h.wantCounts(1, 2)
	// One call holds a present waiter, two away ones and one twice.
	h.hold(h.b, 3*time.Minute, w[2], w[0], w[1], w[0])
	h.wantCounts(3, 0)
	h.step(3*time.Minute + time.Second)
	h.wantPresent(3*time.Minute, w, true, true, true)
	h.wantCounts(3, 0)
}

// wantCounts checks the room's counts of present and away waiters.
func (h *holderRoom) wantCounts(waiting, away int) {
	h.t.Helper()
	st, err := h.a.Stats(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	if st.Waiting != waiting || st.Away != away {
		h.t.Fatalf("%d waiting and %d away, want %d and %d", st.Waiting, st.Away, waiting, away)
	}
}

// Across many buckets: every other waiter of a long queue is held, the rest are
// silent; after queue_ttl exactly the held ones are present, and the head of the line
// is the first held one.
func TestHeldAcrossLongQueue(t *testing.T) {
	h := newHolderRoom(t)
	w := h.queue(3000)
	var held []queue.VisitorID
	for i := 0; i < len(w); i += 2 {
		held = append(held, w[i])
	}
	h.hold(h.a, 0, held...)
	for s := 20 * time.Second; s <= 2*time.Minute; s += 20 * time.Second {
		h.hold(h.a, s)
		h.step(s + time.Second)
	}
	want := make([]bool, len(w))
	for i := range want {
		want[i] = i%2 == 0
	}
	h.wantPresent(2*time.Minute, w, want...)
	st, err := h.a.Stats(context.Background())
	if err != nil || st.Waiting != 1500 || st.Away != 1500 {
		t.Fatalf("Stats %+v %v, want 1500 waiting and 1500 away", st, err)
	}
	// The only slot frees: the first held waiter goes in, though its own heard time
	// is two minutes old.
	if _, err := h.a.Leave(context.Background(), h.activeOne()); err != nil {
		t.Fatal(err)
	}
	res, err := h.a.Step(context.Background(), h.at(2*time.Minute+2*time.Second), h.lim)
	if err != nil || len(res.Admitted) != 1 || res.Admitted[0] != w[0] {
		t.Fatalf("Step after a slot freed: %+v %v, want the first held waiter", res, err)
	}
}

// activeOne is the visitor holding the room's only slot.
func (h *holderRoom) activeOne() queue.VisitorID {
	h.t.Helper()
	ids, err := h.a.shared.client.ZRange(context.Background(), h.a.keys[1], 0, 0).Result()
	if err != nil || len(ids) != 1 {
		h.t.Fatalf("active set: %v %v", ids, err)
	}
	var id queue.VisitorID
	copy(id[:], ids[0])
	return id
}

// roomName is the room s was opened for (its keys are <prefix>{<room>}:...).
func (s *roomStore) roomName() string {
	k := s.keys[0]
	return k[strings.IndexByte(k, '{')+1 : strings.IndexByte(k, '}')]
}

// watched is how many buckets the sweep watches for present waiters gone silent.
func (h *holderRoom) watched() int64 {
	h.t.Helper()
	n, err := h.a.shared.client.ZCard(context.Background(), h.a.keys[5]).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// A long line held by one instance leaves the sweep's watch once swept (its lease
// keeps it), and is watched again when that lease lapses: every waiter goes away
// queue_ttl after the last renewal. The instance comes back and holds them again, and
// a second lapse sends them away again.
func TestLapsedLeaseSendsItsWaitersAway(t *testing.T) {
	h := newHolderRoom(t)
	w := h.queue(3000)
	h.hold(h.a, 0, w...)
	h.lapse(0, w)
	// a is back: its hub holds its waiters again.
	h.hold(h.a, 4*time.Minute, w...)
	h.wantPresent(4*time.Minute, w, everyone(len(w), true)...)
	h.lapse(4*time.Minute, w)
}

// lapse runs both instances from start, a holding ids and b holding nobody, for two
// minutes of renewals and steps, then only b for one more: ids are out of the sweep's
// watch, present until queue_ttl after a's last renewal, and away at it.
func (h *holderRoom) lapse(start time.Duration, ids []queue.VisitorID) {
	h.t.Helper()
	last := start + 2*time.Minute
	for s := start + 20*time.Second; s <= last; s += 20 * time.Second {
		h.hold(h.a, s)
		h.hold(h.b, s)
		h.step(s + time.Second)
	}
	if n := h.watched(); n != 0 {
		h.t.Fatalf("%d buckets still watched, though every waiter is held under a fresh lease", n)
	}
	end := last + h.lim.QueueTTL
	for s := last + 10*time.Second; s < end; s += 10 * time.Second {
		h.hold(h.b, s)
		h.step(s)
	}
	h.step(end - time.Millisecond)
	h.wantPresent(end, ids, everyone(len(ids), true)...)
	h.step(end)
	h.wantPresent(end, ids, everyone(len(ids), false)...)
}

func everyone(n int, present bool) []bool {
	want := make([]bool, n)
	for i := range want {
		want[i] = present
	}
	return want
}

// A waiter let go after the sweep stopped watching it (it was held) is watched again:
// away queue_ttl after it was let go.
func TestWaiterReleasedAfterTheSweepGoesAway(t *testing.T) {
	h := newHolderRoom(t)
	w := h.queue(2)
	h.hold(h.a, 0, w...)
	for s := 20 * time.Second; s <= 140*time.Second; s += 20 * time.Second {
		h.hold(h.a, s)
		h.step(s + time.Second)
		if s == time.Minute && h.watched() != 0 {
			t.Fatalf("the bucket of two held waiters is still watched after queue_ttl")
		}
		if s == 100*time.Second {
			h.release(h.a, s, w[0])
		}
	}
	h.step(160*time.Second - time.Millisecond)
	h.wantPresent(160*time.Second, w, true, true)
	h.step(160 * time.Second)
	h.wantPresent(160*time.Second, w, false, true)
}
