package fairness

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Entry ids, the drawn order, and placing it into the line.

// entryInfo starts what an entry id's HMAC is over; the ticket follows it.
const entryInfo = "waiting_room entry\x00"

// entries makes the entry ids of one draw: HMAC-SHA256 under its entry key of
// entryInfo and the ticket as 8 bytes big-endian, cut to 16 bytes. Not safe for
// concurrent use.
type entries struct {
	mac hash.Hash
	buf []byte
}

func newEntries(key []byte) *entries {
	return &entries{mac: hmac.New(sha256.New, key), buf: make([]byte, 0, sha256.Size)}
}

func (e *entries) of(ticket uint64) draw.Entry {
	e.mac.Reset()
	var msg [len(entryInfo) + 8]byte
	copy(msg[:], entryInfo)
	binary.BigEndian.PutUint64(msg[len(entryInfo):], ticket)
	e.mac.Write(msg[:])
	e.buf = e.mac.Sum(e.buf[:0])
	return draw.Entry(e.buf[:len(draw.Entry{})])
}

// drawn is what this instance worked out of a closed draw from the store's record and
// entrants alone: the entrants' entry ids, the entries list and its hash, and the
// drawn order.
type drawn struct {
	id       string
	entrants []uint64     // their tickets at the close, ascending
	entries  []draw.Entry // entries[i] is entrants[i]'s
	place    []uint32     // place[i] is entrants[i]'s place, from 1
	byPlace  []uint64     // the tickets, in the drawn order
	list     []byte       // the entries list (draw.List)
	hash     string       // its hash (draw.EntriesHash)
}

// keptDrawn is how many worked-out draws an instance keeps: the current one and the
// ones before it that visitors may still check.
const keptDrawn = 3

// work returns what follows from closed draw rec, working it out once: reading the
// entrants (a million in about a second) and ranking them.
func (d *Draws) work(ctx context.Context, st queue.Store, rec *queue.DrawRecord) (*drawn, error) {
	if w := d.worked(rec.ID); w != nil {
		return w, nil
	}
	d.placing.Lock() // one instance's work is done once, whoever asks
	defer d.placing.Unlock()
	return d.workLocked(ctx, st, rec)
}

// workLocked is work with d.placing held.
func (d *Draws) workLocked(ctx context.Context, st queue.Store, rec *queue.DrawRecord) (*drawn, error) {
	if w := d.worked(rec.ID); w != nil {
		return w, nil
	}
	tickets, err := st.DrawEntrants(ctx, rec.ID, nil)
	if err != nil {
		return nil, err
	}
	w := order(rec, tickets)
	if w.list, err = draw.List(w.entries); err != nil {
		// Two entrants with one entry id: a chance of 2^-128 a pair, or a bug.
		return nil, fmt.Errorf("draw %s: %w", rec.ID, err)
	}
	w.hash = draw.EntriesHash(w.list)
	if !rec.Random() && rec.State != queue.DrawOpen && len(tickets) != rec.Entrants {
		return nil, fmt.Errorf("draw %s: %d entrants read, the record says %d", rec.ID, len(tickets), rec.Entrants)
	}
	d.mu.Lock()
	d.computed = append(d.computed, w)
	if len(d.computed) > keptDrawn {
		d.computed = slices.Delete(d.computed, 0, len(d.computed)-keptDrawn)
	}
	d.mu.Unlock()
	return w, nil
}

// Work works out the room's current draw here once it has closed, so that this
// instance's receipts and page have it: the room's loop calls it after Advance.
func (d *Draws) Work(ctx context.Context, st queue.Store, fail func(string, error)) {
	rec := d.cur.Load()
	if rec == nil || rec.State == queue.DrawOpen || d.worked(rec.ID) != nil {
		return
	}
	if _, err := d.work(ctx, st, rec); err != nil {
		fail("working out a draw", err)
	}
}

// worked is draw id as worked out here, or nil.
func (d *Draws) worked(id string) *drawn {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.computed {
		if w.id == id {
			return w
		}
	}
	return nil
}

// order works out rec's order of the entrants at tickets (ascending), by the rule:
// ascending by HMAC-SHA256 under the seed of the entry id's text, ties by entry id.
func order(rec *queue.DrawRecord, tickets []uint64) *drawn {
	w := &drawn{id: rec.ID, entrants: tickets, entries: make([]draw.Entry, len(tickets)),
		place: make([]uint32, len(tickets)), byPlace: make([]uint64, len(tickets))}
	e := newEntries(rec.EntryKey[:])
	r := draw.NewRanker(rec.Seed)
	ranks := make([]draw.Rank, len(tickets))
	idx := make([]int32, len(tickets))
	for i, t := range tickets {
		w.entries[i] = e.of(t)
		ranks[i] = r.Rank(w.entries[i])
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int { return draw.Compare(w.entries[a], ranks[a], w.entries[b], ranks[b]) })
	for p, i := range idx {
		w.byPlace[p] = tickets[i]
		w.place[i] = uint32(p + 1)
	}
	return w
}

// index is the entrant at ticket (its ticket at the close) in w's lists, ok false
// when no entrant held that ticket.
func (w *drawn) index(ticket uint64) (int, bool) { return slices.BinarySearch(w.entrants, ticket) }

// The placing of an event's order: the instance that claims a window of claimWindow
// (queue.Store.Once, fleet-wide) places chunks of placeChunk places, for at most
// placeFor of each tick of the room's, while the room holds; the next window's
// claimer goes on from where the record says the last one got to.
const (
	claimWindow = 30 * time.Second
	placeChunk  = 1000
	placeFor    = time.Second
)

// claim is this instance's claim on placing a draw's order.
type claim struct {
	id    string
	until time.Time
}

// place places what it can of closed event draw rec's order in this tick, if this
// instance has the claim, and returns the record as it then is.
func (d *Draws) place(ctx context.Context, st queue.Store, rec *queue.DrawRecord, fail func(string, error)) *queue.DrawRecord {
	if !d.placing.TryLock() {
		return rec // another of this instance's calls is at it
	}
	defer d.placing.Unlock()
	w, err := d.workLocked(ctx, st, rec)
	if err != nil {
		fail("working out a draw", err)
		return rec
	}
	start := time.Now()
	until, ok := d.claimed(ctx, st, rec.ID, start, fail)
	if !ok {
		return rec
	}
	for rec.State == queue.DrawClosed && time.Now().Before(until) && time.Since(start) < placeFor {
		from := rec.Done
		got, err := st.PlaceDraw(ctx, rec.ID, from, w.byPlace[from:min(from+placeChunk, len(w.byPlace))])
		if err != nil {
			fail("placing a draw", err)
			break
		}
		rec = &got
		if got.Done == from && got.State == queue.DrawClosed {
			break // another instance's chunk went first; the next tick reads where
		}
	}
	d.setCurrent(rec)
	if rec.State == queue.DrawDrawn {
		d.log.Info("draw drawn", zap.String("room", d.room), zap.String("draw", rec.ID),
			zap.Int("entrants", rec.Entrants), zap.String("seed", rec.Seed.String()))
	}
	return rec
}

// claimed reports whether this instance holds the claim on placing draw id at now,
// claiming the window of now if nobody has, and until when.
func (d *Draws) claimed(ctx context.Context, st queue.Store, id string, now time.Time, fail func(string, error)) (time.Time, bool) {
	d.mu.Lock()
	c := d.claim
	d.mu.Unlock()
	if c.id == id && now.Before(c.until) {
		return c.until, true
	}
	n, until := window(now)
	ok, err := st.Once(ctx, "draw:"+id+":place:"+n, until)
	if err != nil {
		fail("claiming a draw's placing", err)
		return until, false
	}
	if ok {
		d.mu.Lock()
		d.claim = claim{id: id, until: until}
		d.mu.Unlock()
	}
	return until, ok
}
