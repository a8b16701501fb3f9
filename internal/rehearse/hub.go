package rehearse

// The waiting page keeps its place through its WebSocket: the room's hub hears of
// every connected waiter every heartbeat interval I (push.Hub; on a memory store,
// a batched Store.Heartbeat per push round, each waiter timed from its socket's
// opening). The store does one thing with a present waiter's last-heard time: the
// admission step sends away one last heard of queue_ttl ago. So the rehearsal beats
// less often, and the store holds the same line at every step:
//
//   - a connected waiter is heard of on a ring of as many of the real hub's
//     intervals as fit within queue_ttl: on some of the real hub's beats, and
//     often enough that no step finds it silent for queue_ttl, so it is present
//     throughout, as with the real hub;
//   - a socket that will close (the rehearsal drew when its visitor gives up or
//     its phone sleeps) gets, as well, the beat the real hub gave it last before
//     the close, at that instant: from then on the store holds the same last-heard
//     time as with the real hub, so the waiter goes away, and loses its place, at
//     the same step.
//
// In between, a waiter's last-heard time is older than with the real hub, and
// nothing reads it but the sweep, which finds it recent enough either way; every
// beat is at the clock's time, so the store's list of waiters by last-heard time
// stays in order. At the default queue_ttl of 1m that is one beat in five of the
// real hub's. A beat costs a map lookup in the store: at half a million waiters it is
// the larger part of a rehearsal's time (BenchmarkRehearse). TestCoarseHub holds
// the two ways to the same sale.
//
// The sockets' positions and ETAs are not computed: they change nothing the store
// holds, and the ETA recorded is the page's first answer's.

type hub struct {
	step    int64 // ns between two admission steps, and two beats of the ring
	every   int64 // the real hub's interval, a whole number of steps
	buckets [][]hubEntry
	// open is, by visitor, the registration of its open socket (0: none), and
	// epochs its last: a bucket's entry of a socket since closed is let go. They
	// are dense, so a bucket's walk reads them from cache, not each visitor.
	open, epochs []uint32
	ids          []visitorID
}

// hubEntry is a socket heard of in a bucket.
type hubEntry struct {
	id    visitorID
	first int64 // its first beat
	v     int32
	epoch uint32
}

// newHub is the hub of a room whose hub hears of a waiter every interval, with
// queueTTL; intervals is how many of the real hub's intervals the ring's period
// is (0: as many as fit within queue_ttl).
func newHub(interval, queueTTL, step int64, intervals int) *hub {
	every := max(1, (interval+step-1)/step) * step
	if intervals <= 0 {
		// Under queue_ttl, not at it: a step run at once by a departure (Room.kick)
		// at the instant of a ring's beat comes before it.
		intervals = int(max(1, (queueTTL-step)/every))
	}
	return &hub{step: step, every: every, buckets: make([][]hubEntry, int64(intervals)*every/step)}
}

// opened registers visitor n's socket, for the place id, opened at now, which
// closes at closeAt (-1: not by itself). It returns the socket's registration, and
// when the real hub would beat it last before that close if the ring will not: the
// caller beats it then (-1: no such beat).
func (h *hub) opened(n int32, id visitorID, now, closeAt int64) (uint32, int64) {
	for int(n) >= len(h.open) {
		h.open, h.epochs = append(h.open, 0), append(h.epochs, 0)
	}
	first := (now+h.step-1)/h.step*h.step + h.every // its first beat
	b := (first / h.step) % int64(len(h.buckets))
	h.epochs[n]++
	epoch := h.epochs[n]
	h.open[n] = epoch
	h.buckets[b] = append(h.buckets[b], hubEntry{id: id, first: first, v: n, epoch: epoch})
	if closeAt < first {
		return epoch, -1
	}
	last := first + (closeAt-1-first)/h.every*h.every // before the close, not at it
	if (last-first)%(int64(len(h.buckets))*h.step) == 0 {
		return epoch, -1 // a beat of the ring
	}
	return epoch, last
}

// closed is visitor n's socket closing, whatever the reason: the page loads the
// site, the phone sleeps, the tab is closed.
func (h *hub) closed(n int32) {
	if int(n) < len(h.open) {
		h.open[n] = 0
	}
}

// isOpen says the socket registered as epoch for visitor n is still open.
func (h *hub) isOpen(n int32, epoch uint32) bool { return h.open[n] == epoch }

// due is the ids of the sockets the ring hears of at the step at now (a multiple
// of step), and lets go of the sockets closed since.
func (h *hub) due(now int64) []visitorID {
	b := (now / h.step) % int64(len(h.buckets))
	entries := h.buckets[b]
	h.ids = h.ids[:0]
	kept := entries[:0]
	for _, e := range entries {
		if h.open[e.v] != e.epoch {
			continue
		}
		kept = append(kept, e)
		if now >= e.first {
			h.ids = append(h.ids, e.id)
		}
	}
	clear(entries[len(kept):])
	h.buckets[b] = kept
	return h.ids
}
