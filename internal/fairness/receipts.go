package fairness

import (
	"crypto/hkdf"
	"crypto/sha256"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Receipts. A waiter in a draw gets a receipt of it, signed with the key the draw was
// committed under; every other waiter (a room that draws nothing, a pass holder, one
// who joined after an event's close) gets their ticket, signed (draw.FIFO), with an
// entry id made as a draw's are under a key of its own, derived from the room's
// secret. A receipt is the same whichever instance makes it (Ed25519 signs alike), so
// each instance keeps the last it made for each waiter and signs again only when it
// changes: a signature costs tens of microseconds, and a line of waiters polls.

// fifoInfo is the HKDF info of the FIFO receipts' entry key; the room's name follows.
const fifoInfo = "waiting_room fifo entry\x00"

// keys are the room's keys: a signer for each of its secrets, the first signing, and
// the FIFO entry key of the first.
type keys struct {
	signers []*draw.Signer
	fifo    []byte
}

// SetSecrets gives the draws the room's secrets, the first of which signs.
func (d *Draws) SetSecrets(secrets [][]byte) {
	if len(secrets) == 0 {
		return
	}
	k := &keys{}
	for _, s := range secrets {
		sg, err := draw.NewSigner(d.room, s)
		if err != nil {
			d.log.Warn("no receipts: the room's key cannot be made", zap.String("room", d.room), zap.Error(err))
			return
		}
		k.signers = append(k.signers, sg)
	}
	fifo, err := hkdf.Key(sha256.New, secrets[0], nil, fifoInfo+d.room, 32)
	if err != nil {
		return
	}
	k.fifo = fifo
	d.keys.Store(k)
	d.receipts.clear()
}

// PublicKey is the key that signs the room's receipts outside a draw, "" before the
// room has a secret.
func (d *Draws) PublicKey() string {
	if k := d.keys.Load(); k != nil {
		return k.signers[0].PublicKey()
	}
	return ""
}

// signerOf is the signer of a draw committed under public key pub, nil when none of
// the room's secrets makes it (the secret was rotated out of the list).
func (k *keys) signerOf(pub string) *draw.Signer {
	for _, s := range k.signers {
		if s.PublicKey() == pub {
			return s
		}
	}
	return nil
}

// Holder is a waiter as a request shows them: what their receipt says.
type Holder struct {
	ID     queue.VisitorID
	Ticket uint64
	// Since is when they joined (the cookie's): when the receipt was issued, or the
	// draw's commitment if later.
	Since time.Time
	// Pass says they joined with a pass: their lane is in no draw.
	Pass bool
}

// Receipt is waiter h's receipt as its JSON, and the path of its draw's page; nil and
// "" when the room gives none (its page is off, it has no secret yet, or the draw's
// key is not among its secrets).
func (d *Draws) Receipt(h Holder) ([]byte, string) {
	k := d.keys.Load()
	if d.page == "" || k == nil {
		return nil, ""
	}
	r, entry, signer := d.receiptOf(k, h)
	if signer == nil {
		return nil, ""
	}
	if b, url := d.receipts.get(h.ID, r); b != nil {
		return b, url // the entry follows from the draw and the ticket: not made again
	}
	r.Entry = entry.make()
	signed, err := signer.Sign(r)
	if err != nil {
		return nil, ""
	}
	b, err := signed.MarshalJSON()
	if err != nil {
		return nil, ""
	}
	url := d.page + "/" + r.Draw
	d.receipts.put(h.ID, r, b, url)
	return b, url
}

// entryOf is how to make an entry id, which only a receipt not signed before needs:
// the HMAC of ticket under key, or the id worked out already.
type entryOf struct {
	key    []byte
	ticket uint64
	worked *draw.Entry
}

func (e entryOf) make() draw.Entry {
	if e.worked != nil {
		return *e.worked
	}
	return newEntries(e.key).of(e.ticket)
}

// receiptOf is h's receipt unsigned and without its entry id (entry makes it), and
// the signer it is signed with.
func (d *Draws) receiptOf(k *keys, h Holder) (draw.Receipt, entryOf, *draw.Signer) {
	r := draw.Receipt{Room: d.room, Draw: draw.FIFO, Ticket: h.Ticket, Issued: h.Since.UTC().Truncate(time.Second)}
	rec := d.cur.Load()
	if !h.Pass && rec != nil {
		entry, place, in, known := d.entrant(rec, h.Ticket)
		switch {
		case !known:
			return r, entry, nil // an entrant's or not, this instance cannot tell yet
		case in:
			r.Draw, r.Commitment, r.Place = rec.ID, d.commitment(rec), place
			if r.Issued.Before(rec.Committed) {
				r.Issued = rec.Committed
			}
			return r, entry, k.signerOf(rec.PublicKey)
		}
	}
	return r, entryOf{key: k.fifo, ticket: h.Ticket}, k.signers[0]
}

// commitment is rec's commitment, worked out once per draw.
func (d *Draws) commitment(rec *queue.DrawRecord) string {
	if c := d.committed.Load(); c != nil && c.seed == rec.Seed {
		return c.text
	}
	c := &commitmentText{seed: rec.Seed, text: rec.Seed.Commitment()}
	d.committed.Store(c)
	return c.text
}

type commitmentText struct {
	seed draw.Seed
	text string
}

// entrant is how to make the entry id of the waiter at ticket in draw rec and, once
// drawn, their place; in says the ticket is the draw's (not one that came after an
// event's close), and known false that this instance cannot tell yet (the draw is not
// worked out here).
func (d *Draws) entrant(rec *queue.DrawRecord, ticket uint64) (entry entryOf, place uint64, in, known bool) {
	if rec.State == queue.DrawOpen || !rec.Random() && ticket <= rec.Close {
		// Every waiter of an open draw is an entrant; a closed event's not placed yet.
		return entryOf{key: rec.EntryKey[:], ticket: ticket}, 0, true, true
	}
	if !rec.Random() && ticket > rec.First+uint64(rec.Entrants) {
		return entry, 0, false, true // joined after the close
	}
	w := d.worked(rec.ID)
	if w == nil {
		return entry, 0, false, false
	}
	if rec.Random() {
		i, ok := w.index(ticket)
		if !ok {
			return entry, 0, false, true
		}
		return entryOf{worked: &w.entries[i]}, uint64(w.place[i]), true, true
	}
	place = ticket - rec.First
	i, _ := w.index(w.byPlace[place-1])
	if rec.State != queue.DrawDrawn {
		place = 0 // placed, but the draw is not over: no place before the seed is out
	}
	return entryOf{worked: &w.entries[i]}, place, true, true
}

// receiptCache is the last receipt this instance signed for each waiter, bounded.
type receiptCache struct {
	mu sync.Mutex
	m  map[queue.VisitorID]cachedReceipt
}

type cachedReceipt struct {
	r    draw.Receipt // unsigned, without its entry id (it follows from the draw and the ticket)
	json []byte
	url  string
}

// maxCachedReceipts bounds the cache: about 400 bytes each.
const maxCachedReceipts = 1 << 16

func (c *receiptCache) get(id queue.VisitorID, r draw.Receipt) ([]byte, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.m[id]; ok && got.r == r {
		return got.json, got.url
	}
	return nil, ""
}

func (c *receiptCache) put(id queue.VisitorID, r draw.Receipt, b []byte, url string) {
	r.Entry, r.Signature = draw.Entry{}, ""
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedReceipts {
		c.m = make(map[queue.VisitorID]cachedReceipt)
	}
	c.m[id] = cachedReceipt{r: r, json: b, url: url}
}

func (c *receiptCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}
