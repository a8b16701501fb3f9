package fairness

import (
	"context"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Draws is one room's draws on this instance: the room's current draw as last read
// from the store, what this instance worked out of the draws it has seen, and its
// keys. The store is the one truth; everything here is a cache of it or follows from
// it. It is safe for concurrent use: the room's loop advances it, requests read it.
type Draws struct {
	room string
	// page is the draw page's path on the site ("" when it is off): the receipts'
	// draw_url and the page's entries_url start with it.
	page string
	log  *zap.Logger
	// source is where seeds and entry keys come from: nil, the system's random source;
	// a rehearsal's seeded one, so that it replays.
	source io.Reader

	cur    atomic.Pointer[queue.DrawRecord] // the current draw as last read; nil: none
	readAt atomic.Int64                     // when it was read, unix ns
	keys   atomic.Pointer[keys]             // nil until the room has a secret

	mu       sync.Mutex
	done     map[string]bool // lotteries this instance knows are over: drawn, or drawn by Shuffle
	computed []*drawn        // the draws worked out here, the latest last (order.go)
	claim    claim           // this instance's claim on placing an order (order.go)

	placing   sync.Mutex // one placer per instance
	picker    picker     // a random draw's picks (picks.go)
	receipts  receiptCache
	committed atomic.Pointer[commitmentText] // the current draw's commitment, as text

	pageMu sync.Mutex
	pages  map[string]cachedPage // the pages this instance answered lately (page.go)
}

// New is the draws of room, whose page is at path page ("" for none).
func New(room, page string, log *zap.Logger, random io.Reader) *Draws {
	if log == nil {
		log = zap.NewNop()
	}
	return &Draws{room: room, page: page, log: log, source: random, done: map[string]bool{}}
}

// Want is what the room's settings ask of draws at one moment.
type Want struct {
	// Lottery is the key of an event with a lottery (shuffle) from its pre-queue's
	// opening (or its start, without one) until its end, and Start its start.
	Lottery string
	Start   time.Time
	// Prequeue says that event has not started: its entries are open.
	Prequeue bool
	// Random says mode random is in force.
	Random bool
	// Reads is the lowest format level the room's live instances read
	// (queue.FormatLevel; Room.Fleet): the room commits nothing, and counts no
	// admission by reason, until every instance reads level 2.
	Reads int
	// Step says an admission step follows (the room's loop), which an open random
	// draw's picks are for; Free is how many it may let in (capacity less the
	// active, as last read), which the picks cover.
	Step bool
	Free int
}

// Plan is what the room's admissions do under its draws now.
type Plan struct {
	// Hold: an event's drawn order is not in the line yet, and nobody is admitted.
	Hold bool
	// Picks are an open random draw's picks for the next step (queue.Limits.Picks).
	Picks *queue.Picks
	// Reasons: every instance reads the counts by reason (queue.Limits.Reasons).
	Reasons bool
}

// readEvery is how often the current draw is read from the store while none is
// going on here: how soon a draw another instance committed (a PATCH to mode random
// made there) shows on this one's page. While one is going on or due, it is read at
// most every freshFor: the room's loop reads it each tick, and the joins between
// ticks use that.
const (
	readEvery = 5 * time.Second
	freshFor  = 200 * time.Millisecond
)

// Advance does what is due of the room's draws at now under w, and says what
// admissions do meanwhile. It is cheap when nothing is due (no store call), so that
// the room calls it before every join as well as on each tick: the commitment comes
// before the first entrant, and the close before the first admission after the
// start. fail reports a store call that failed; what it was for is tried again at
// the next call.
func (d *Draws) Advance(ctx context.Context, st queue.Store, now time.Time, w Want, fail func(string, error)) Plan {
	plan := Plan{Reasons: w.Reads >= 2}
	rec := d.current(ctx, st, w, fail)
	if w.Lottery != "" {
		id := EventID(w.Start)
		if !d.isDone(id) && !d.isDone(w.Lottery) {
			var due bool
			rec, due = d.lottery(ctx, st, now, w, id, rec, fail)
			if due {
				return d.holding(plan, rec)
			}
		}
	}
	switch {
	case w.Random && !w.Prequeue:
		rec = d.random(ctx, st, now, w, rec, fail)
		if rec != nil && rec.Random() && rec.State == queue.DrawOpen && w.Step {
			plan.Picks = d.picks(ctx, st, rec, w.Free, fail)
		}
	case rec != nil && rec.State != queue.DrawDrawn && (!w.Prequeue || w.Lottery == ""):
		// A draw that nothing asks for any more (the event is over or gone, mode
		// random ended): what was committed is drawn as committed.
		rec = d.finish(ctx, st, rec, fail)
	}
	return d.holding(plan, rec)
}

// holding says admissions hold while rec is an event's draw not yet in the line.
func (d *Draws) holding(plan Plan, rec *queue.DrawRecord) Plan {
	plan.Hold = rec != nil && !rec.Random() && rec.State == queue.DrawClosed
	return plan
}

// lottery does what is due of the lottery of the event w names, draw id: commit it
// in its pre-queue, close and place it from its start. due says the lottery is not
// over: the line holds for it (until it is placed) and nothing else is drawn.
func (d *Draws) lottery(ctx context.Context, st queue.Store, now time.Time, w Want, id string, rec *queue.DrawRecord, fail func(string, error)) (*queue.DrawRecord, bool) {
	if rec == nil || rec.ID != id {
		if rec != nil && rec.State != queue.DrawDrawn {
			return d.finish(ctx, st, rec, fail), true // the draw before this one first
		}
		if !d.committing(w) {
			return rec, d.legacyLottery(ctx, st, w, fail)
		}
		// The store gives back this draw (new, or as it holds it), or another going on.
		if rec = d.commit(ctx, st, now, id, w.Lottery, fail); rec == nil || rec.ID != id {
			return rec, true
		}
	}
	if !w.Prequeue {
		rec = d.finish(ctx, st, rec, fail)
	}
	if rec.State == queue.DrawDrawn {
		d.markDone(id)
		return rec, false
	}
	return rec, true
}

// legacyLottery is the lottery of a fleet that cannot commit one (an instance of an
// older release is live): drawn as that release draws it (queue.Store.Shuffle), once,
// at the start. It reports whether it is still due (the pre-queue).
func (d *Draws) legacyLottery(ctx context.Context, st queue.Store, w Want, fail func(string, error)) bool {
	if w.Prequeue {
		return true
	}
	shuffled, err := st.Shuffle(ctx, w.Lottery)
	if err != nil {
		fail("drawing lots", err)
		return true
	}
	d.markDone(w.Lottery)
	if shuffled {
		d.log.Warn("event started: queue shuffled without a committed draw, since an instance of an older release serves the room",
			zap.String("room", d.room), zap.String("event", w.Lottery))
	}
	return false
}

// random does what is due while mode random is in force: a random draw committed and
// open. It returns the current draw.
func (d *Draws) random(ctx context.Context, st queue.Store, now time.Time, w Want, rec *queue.DrawRecord, fail func(string, error)) *queue.DrawRecord {
	switch {
	case rec != nil && rec.Random() && rec.State == queue.DrawOpen:
		return rec
	case rec != nil && rec.State != queue.DrawDrawn:
		return d.finish(ctx, st, rec, fail)
	case !d.committing(w):
		return rec // picked uniformly, as a release before draws did
	}
	return d.commit(ctx, st, now, RandomID(now), "", fail)
}

// committing says the room may commit a draw: every instance reads the draw's keys
// and has a secret to sign its receipts with.
func (d *Draws) committing(w Want) bool { return w.Reads >= 2 && d.keys.Load() != nil }

// commit offers a fresh draw id to the store and returns the room's current draw as
// the store holds it then: this one, or one another instance committed first.
func (d *Draws) commit(ctx context.Context, st queue.Store, now time.Time, id, lottery string, fail func(string, error)) *queue.DrawRecord {
	rec := queue.DrawRecord{ID: id, Lottery: lottery, Seed: draw.SeedFrom(d.source), Committed: now.UTC().Truncate(time.Second),
		PublicKey: d.keys.Load().signers[0].PublicKey()}
	draw.Fill(d.source, rec.EntryKey[:])
	got, err := st.CommitDraw(ctx, rec)
	if err != nil {
		fail("committing a draw", err)
		return d.cur.Load()
	}
	if got.ID == id && got.Seed == rec.Seed {
		d.log.Info("draw committed", zap.String("room", d.room), zap.String("draw", id),
			zap.String("commitment", got.Seed.Commitment()))
	}
	d.setCurrent(&got)
	return &got
}

// finish moves rec on: closes its entries, and places an event's order (order.go).
func (d *Draws) finish(ctx context.Context, st queue.Store, rec *queue.DrawRecord, fail func(string, error)) *queue.DrawRecord {
	if rec.State == queue.DrawOpen {
		got, err := st.CloseDraw(ctx, rec.ID)
		if err != nil {
			fail("closing a draw", err)
			return rec
		}
		d.log.Info("draw closed", zap.String("room", d.room), zap.String("draw", rec.ID), zap.Int("entrants", got.Entrants))
		rec = &got
		d.setCurrent(rec)
	}
	if rec.State == queue.DrawClosed {
		rec = d.place(ctx, st, rec, fail)
	}
	return rec
}

// current is the room's current draw: read again from the store while one is going
// on or asked for, else every readEvery.
func (d *Draws) current(ctx context.Context, st queue.Store, w Want, fail func(string, error)) *queue.DrawRecord {
	rec := d.cur.Load()
	going := rec != nil && rec.State != queue.DrawDrawn
	age := time.Since(time.Unix(0, d.readAt.Load()))
	switch {
	case age < freshFor:
		return rec
	case !going && w.Lottery == "" && !w.Random && age < readEvery:
		return rec
	case w.Lottery != "" && w.Prequeue && rec != nil && rec.ID == EventID(w.Start) && rec.State == queue.DrawOpen:
		return rec // committed, and nothing changes it before the start
	}
	got, ok, err := st.Draw(ctx, "")
	if err != nil {
		fail("reading the current draw", err)
		return rec
	}
	d.readAt.Store(time.Now().UnixNano())
	if !ok {
		return nil
	}
	d.setCurrent(&got)
	return &got
}

// Current is the room's current draw as last read, nil for none.
func (d *Draws) Current() *queue.DrawRecord { return d.cur.Load() }

func (d *Draws) setCurrent(rec *queue.DrawRecord) {
	d.cur.Store(rec)
	d.readAt.Store(time.Now().UnixNano())
}

func (d *Draws) isDone(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done[key]
}

func (d *Draws) markDone(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done[key] = true
}

// EventID is the draw id of the lottery of the event that starts at start.
func EventID(start time.Time) string { return "event-" + start.UTC().Format(time.RFC3339Nano) }

// RandomID is the draw id of a random draw committed at now.
func RandomID(now time.Time) string {
	return "random-" + now.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// window is the claim window of now: the instance that claims it places an order
// until it ends (order.go).
func window(now time.Time) (string, time.Time) {
	n := now.UnixNano() / int64(claimWindow)
	return strconv.FormatInt(n, 10), time.Unix(0, (n+1)*int64(claimWindow))
}
