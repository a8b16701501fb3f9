package fairness

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The room's public account: the draw page (its JSON, and what the HTML shows), the
// entries list, and the admin API's view of the current draw. Nothing on them
// identifies a visitor; the seed is on them only once the store says the draw is
// drawn.

// ErrNoDraw is a page asked for a draw the store does not hold.
var ErrNoDraw = errors.New("no such draw")

// Page is a draw's public page.
type Page struct {
	// Page is what a verifier reads (its AdmittedByReason is the JSON below).
	draw.Page
	// Admitted are the room's admissions by reason, a minute at a time, of the last
	// day (queue.AdmissionsKept), oldest first, and their total.
	Admitted []queue.Minute
	Total    queue.ByReason
	// JSON is the page's JSON (docs/fairness.md).
	JSON []byte
}

// admittedJSON is admitted_by_reason.
type admittedJSON struct {
	Since     string       `json:"since"`
	Total     reasonsJSON  `json:"total"`
	PerMinute []minuteJSON `json:"per_minute"`
}

type reasonsJSON struct {
	InOrder  uint64 `json:"in_order"`
	Pass     uint64 `json:"pass"`
	Returned uint64 `json:"returned"`
	Handoff  uint64 `json:"handoff"`
	Admin    uint64 `json:"admin"`
	Random   uint64 `json:"random"`
}

type minuteJSON struct {
	Minute string `json:"minute"`
	reasonsJSON
}

func reasonsOf(n queue.ByReason) reasonsJSON {
	return reasonsJSON{n[queue.ReasonInOrder], n[queue.ReasonPass], n[queue.ReasonReturned], n[queue.ReasonHandoff],
		n[queue.ReasonAdmin], n[queue.ReasonRandom]}
}

// pageFor is how long an instance answers a page from its copy: the page's own
// Cache-Control lets clients keep it longer.
const pageFor = time.Second

type cachedPage struct {
	p  *Page
	at time.Time
}

// Page is the public page of draw id: the room's current draw for "" (FIFO's when it
// has none), the room's FIFO page for draw.FIFO, else that draw's; ErrNoDraw when the
// store does not hold it.
func (d *Draws) Page(ctx context.Context, st queue.Store, id string, now time.Time) (*Page, error) {
	if p := d.pageCached(id, now); p != nil {
		return p, nil
	}
	k := d.keys.Load()
	if k == nil {
		return nil, errors.New("the room has no secret yet")
	}
	var rec *queue.DrawRecord
	switch id {
	case draw.FIFO:
	case "":
		rec = d.cur.Load()
		if rec == nil {
			got, ok, err := st.Draw(ctx, "")
			if err != nil {
				return nil, err
			}
			if ok {
				rec = &got
			}
		}
	default:
		if c := d.cur.Load(); c != nil && c.ID == id {
			rec = c
		} else {
			got, ok, err := st.Draw(ctx, id)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, ErrNoDraw
			}
			rec = &got
		}
	}
	p := &Page{Page: draw.Page{Room: d.room, Draw: draw.FIFO, State: draw.StateOpen, PublicKey: k.signers[0].PublicKey()}}
	if rec != nil {
		p.Draw, p.State, p.Committed = rec.ID, draw.StateOpen, rec.Committed
		p.Commitment, p.PublicKey = rec.Seed.Commitment(), rec.PublicKey
		if rec.State != queue.DrawOpen {
			w, err := d.work(ctx, st, rec)
			if err != nil {
				return nil, err
			}
			p.State, p.Entrants, p.EntriesHash = draw.StateClosed, uint64(len(w.entrants)), w.hash
			p.EntriesURL = d.page + "/" + rec.ID + "/entries"
		}
		if rec.State == queue.DrawDrawn {
			// The one place a seed is given: the store says the draw is drawn.
			p.State, p.Seed = draw.StateDrawn, rec.Seed.String()
		}
	}
	since := now.Add(-queue.AdmissionsKept)
	minutes, err := st.Admissions(ctx, since, now)
	if err != nil {
		return nil, err
	}
	p.Admitted = minutes
	a := admittedJSON{Since: since.UTC().Truncate(time.Minute).Format(time.RFC3339), PerMinute: []minuteJSON{}}
	for _, m := range minutes {
		for i, n := range m.ByReason {
			p.Total[i] += n
		}
		a.PerMinute = append(a.PerMinute, minuteJSON{m.At.UTC().Format(time.RFC3339), reasonsOf(m.ByReason)})
	}
	a.Total = reasonsOf(p.Total)
	if p.AdmittedByReason, err = json.Marshal(a); err != nil {
		return nil, err
	}
	if p.JSON, err = p.Page.MarshalJSON(); err != nil {
		return nil, err
	}
	d.pageKeep(id, p, now)
	return p, nil
}

func (d *Draws) pageCached(id string, now time.Time) *Page {
	d.pageMu.Lock()
	defer d.pageMu.Unlock()
	if c, ok := d.pages[id]; ok && now.Sub(c.at) < pageFor && !now.Before(c.at) {
		return c.p
	}
	return nil
}

func (d *Draws) pageKeep(id string, p *Page, now time.Time) {
	d.pageMu.Lock()
	defer d.pageMu.Unlock()
	if d.pages == nil || len(d.pages) > 16 {
		d.pages = map[string]cachedPage{}
	}
	d.pages[id] = cachedPage{p: p, at: now}
}

// Entries is closed draw id's entries list and its hash (draw.List); ErrNoDraw when
// the store holds no such draw or it is open.
func (d *Draws) Entries(ctx context.Context, st queue.Store, id string) ([]byte, string, error) {
	rec := d.cur.Load()
	if rec == nil || rec.ID != id {
		got, ok, err := st.Draw(ctx, id)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, "", ErrNoDraw
		}
		rec = &got
	}
	if rec.State == queue.DrawOpen {
		return nil, "", ErrNoDraw
	}
	w, err := d.work(ctx, st, rec)
	if err != nil {
		return nil, "", err
	}
	return w.list, w.hash, nil
}

// Info is the admin API's view of the room's current draw (docs/admin-api.md).
type Info struct {
	ID string `json:"id"`
	// State is "open", "closed" (entries closed, the order not yet placed),
	// "drawing" (being placed) or "drawn".
	State      string    `json:"state"`
	Committed  time.Time `json:"committed"`
	Commitment string    `json:"commitment"`
	PublicKey  string    `json:"public_key"`
	// Entrants from the close on; Placed while the order is placed.
	Entrants *int `json:"entrants,omitempty"`
	Placed   *int `json:"placed,omitempty"`
	// Seed once drawn, as the page gives it: never earlier.
	Seed string `json:"seed,omitempty"`
	// Page is the draw's public page ("" when the room's page is off).
	Page string `json:"page,omitempty"`
}

// Info is the room's current draw as last read, nil for none.
func (d *Draws) Info() *Info {
	rec := d.cur.Load()
	if rec == nil {
		return nil
	}
	in := &Info{ID: rec.ID, State: rec.State.String(), Committed: rec.Committed, Commitment: rec.Seed.Commitment(),
		PublicKey: rec.PublicKey}
	if d.page != "" {
		in.Page = d.page + "/" + rec.ID
	}
	if rec.State != queue.DrawOpen {
		n := rec.Entrants
		in.Entrants = &n
	}
	switch {
	case rec.State == queue.DrawClosed && rec.Done > 0:
		done := rec.Done
		in.State, in.Placed = "drawing", &done
	case rec.State == queue.DrawDrawn:
		in.Seed = rec.Seed.String()
	}
	return in
}

// PagePath is where the room's draw page is, "" when it is off.
func (d *Draws) PagePath() string { return d.page }

// ByReason sums minutes.
func ByReason(minutes []queue.Minute) map[string]uint64 {
	out := make(map[string]uint64, queue.NumReasons)
	for r := range queue.NumReasons {
		out[r.String()] = 0
	}
	for _, m := range minutes {
		for r, n := range m.ByReason {
			out[queue.Reason(r).String()] += n
		}
	}
	return out
}
