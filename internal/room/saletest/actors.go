package saletest

import (
	"fmt"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// The cast. Each actor acts when its next request is due, as its own client would:
// a browser polls at the interval the room told it, a bot reconnects its socket, a
// shopper clicks. Nothing here knows the engine's insides; an actor sees only the
// decisions its requests get, and the invariants' watch reads the store.

type actor interface {
	act(s *sale)
}

// device is one browser or client: its cookie jar, or none.
type device struct {
	cookie string
	noJar  bool // a client that never sends the room's cookie
}

// keep stores the cookie a decision sets, as a browser does.
func (dv *device) keep(d *room.Decision) {
	if c := d.Cookie(); c != nil && !dv.noJar {
		dv.cookie = string(c)
	}
}

// visitor is an honest visitor on one browser: it arrives with a page load, polls
// while it waits, shops for a while once in, then checks out (the shop revokes its
// session) or walks away. A sleeper's phone goes silent now and then while it
// waits, for less than away_ttl, then comes back.
type visitor struct {
	name    string
	dev     device
	sleeps  bool
	next    time.Time
	state   visitorState
	id      queue.VisitorID
	ticket  uint64
	shopEnd time.Time
	checks  bool // checks out at the end (the shop revokes), or walks away
	// counted says the visitor is one whose order the line must keep: honest, on one
	// device, never asleep.
	counted bool
}

type visitorState uint8

const (
	arriving visitorState = iota
	waiting
	inside
	gone
)

func (v *visitor) act(s *sale) {
	now := s.clock.Now()
	if v.state == gone || now.Before(v.next) {
		return
	}
	if v.state == inside && !now.Before(v.shopEnd) {
		v.state = gone
		if v.checks {
			s.revoke(v.name, v.id)
		}
		return
	}
	d, i := s.visit(v.name, room.Visit{Cookie: v.dev.cookie, Page: v.state != waiting, Addr: v.name})
	v.dev.keep(&d)
	switch d.Place {
	case queue.Queued:
		if v.state != waiting || d.Visitor != v.id || d.Status.Ticket != v.ticket {
			v.id, v.ticket = d.Visitor, d.Status.Ticket
			s.watch.joined(s, v)
		}
		v.state = waiting
		v.next = now.Add(time.Duration(s.fleet[i].room.Tell(&d, now).RefreshSeconds) * time.Second)
		if away := s.settings(i).AwayTTL - s.settings(i).QueueTTL; v.sleeps && away > 2*time.Second && s.rng.IntN(8) == 0 {
			nap := s.settings(i).QueueTTL + time.Duration(s.rng.Int64N(int64(away/2)))
			s.trace.add(now, "%s's phone sleeps for %v", v.name, nap)
			v.next = now.Add(nap)
		}
	case queue.Admitted:
		if v.state != inside {
			v.state, v.id = inside, d.Visitor
			v.shopEnd = now.Add(time.Duration(3+s.rng.IntN(12)) * time.Second)
		}
		v.next = now.Add(time.Duration(500+s.rng.IntN(2500)) * time.Millisecond)
		if s.shop != nil {
			v.fetchAssets(s)
		}
	default: // turned away, or not now: try again later
		v.state = arriving
		v.next = now.Add(5 * time.Second)
	}
}

// pageAssets is how many requests a page the shop serves brings after it (its
// styles, scripts, pictures, API calls): what gives the adaptive capacity's law
// readings of honest visitors to move on.
const pageAssets = 5

// fetchAssets makes the requests of the page just let in, each to whichever
// instance the load balancer picks, until one is not let in.
func (v *visitor) fetchAssets(s *sale) {
	for range pageAssets {
		d, _ := s.visit(v.name, room.Visit{Cookie: v.dev.cookie, Addr: v.name})
		v.dev.keep(&d)
		if d.Place != queue.Admitted {
			return
		}
	}
}

// bot joins with one page load and from then on only opens the waiting page's
// socket with its cookie, reconnecting every second or two: a place that never
// comes to the shop. Some keep the cookies the socket's answers set, some only the
// first one.
type bot struct {
	name      string
	key       string // an account of the bot's own, or none
	dev       device
	takesAll  bool
	next      time.Time
	joined    bool
	id        queue.VisitorID
	atJoin    bool // admitted by its own page load, when the room had a free slot
	admitted  bool // the store held it admitted when last looked at
	since     time.Time
	arriveTTL time.Duration // the longest arrive_ttl in force since its admission
}

func (b *bot) kind() string {
	kind := "keeps only its first cookie"
	if b.takesAll {
		kind = "keeps the cookies its sockets are sent"
	}
	if b.key != "" {
		kind += ", with an account"
	}
	return kind
}

func (b *bot) act(s *sale) {
	now := s.clock.Now()
	if now.Before(b.next) {
		return
	}
	b.next = now.Add(time.Duration(1000+s.rng.IntN(1000)) * time.Millisecond)
	if !b.joined {
		d, _ := s.visit(b.name, room.Visit{Page: true, Addr: b.name, Key: b.key})
		b.dev.cookie, b.id = string(d.Cookie()), d.Visitor
		b.joined, b.atJoin = d.Place == queue.Queued || d.Place == queue.Admitted, d.Place == queue.Admitted
		return
	}
	d, _ := s.visit(b.name, room.Visit{Socket: true, Cookie: b.dev.cookie, Addr: b.name, Key: b.key})
	if b.takesAll {
		b.dev.keep(&d)
	}
	if d.Visitor != (queue.VisitorID{}) && d.Visitor != b.id {
		// A socket whose cookie names no place joins as a new visitor, admitted at
		// once when a slot is free and nobody waits.
		b.id, b.atJoin, b.admitted = d.Visitor, d.Place == queue.Admitted, false
	}
	// An account's socket joins under the account's one id, so only the answer says
	// it joined: a place in line, or let in at once (Waited 0: it waited nowhere).
	switch {
	case d.Place == queue.Queued:
		b.atJoin = false
	case d.Place == queue.Admitted && d.Waited == 0:
		b.atJoin = true
	}
}

// account is a keyed account (the room's `key`) on several devices, some without a
// cookie jar. It shops, and the shop ends its session at checkout through whichever
// instance served it; a sticky one keeps sending requests after that, as the
// issue's `while :; do curl …; done` does.
type account struct {
	name     string
	key      string
	devices  []device
	next     time.Time
	start    time.Time
	checkout time.Time
	done     bool
	sticky   bool
}

func (a *account) act(s *sale) {
	now := s.clock.Now()
	if now.Before(a.start) || now.Before(a.next) || a.done && !a.sticky {
		return
	}
	a.next = now.Add(time.Duration(500+s.rng.IntN(1000)) * time.Millisecond)
	n := s.rng.IntN(len(a.devices))
	dv := &a.devices[n]
	d, _ := s.visit(fmt.Sprintf("%s/dev%d", a.name, n), room.Visit{Key: a.key, Cookie: dv.cookie, Page: true, Addr: a.name})
	dv.keep(&d)
	if d.Place == queue.Admitted && !a.done && !now.Before(a.checkout) {
		a.done = true
		s.revoke(a.name, d.Visitor)
	}
}

// handoff is a visitor who moves its place to a second device: it waits on the
// first, asks for a code, opens it on the second, and goes on there as an honest
// poller and shopper; the first device keeps asking a little, and is told its place
// moved.
type handoff struct {
	name     string
	first    visitor
	second   visitor
	code     string
	moveAt   time.Time
	moved    bool
	oldPolls int
}

func (h *handoff) act(s *sale) {
	now := s.clock.Now()
	switch {
	case !h.moved && h.first.state != gone && !now.Before(h.moveAt) && (h.first.state == waiting || h.first.state == inside):
		d, _ := s.visit(h.name+"/first", room.Visit{Cookie: h.first.dev.cookie, HandoffNew: true, Addr: h.name})
		h.first.dev.keep(&d)
		if d.Handoff == "" {
			h.moveAt = now.Add(2 * time.Second)
			return
		}
		d, _ = s.visit(h.name+"/second", room.Visit{Handoff: d.Handoff, Page: true, Addr: h.name + "-phone"})
		h.second.dev.keep(&d)
		h.moved = true
		h.second.state, h.second.next, h.second.id = waiting, now.Add(time.Second), d.Visitor
		h.second.shopEnd, h.second.checks = now.Add(time.Duration(3+s.rng.IntN(10))*time.Second), true
		if d.Place == queue.Admitted {
			h.second.state = inside
		}
	case h.moved:
		h.second.act(s)
		if h.oldPolls < 3 && s.rng.IntN(8) == 0 {
			h.oldPolls++
			s.visit(h.name+"/first", room.Visit{Cookie: h.first.dev.cookie, Addr: h.name})
		}
	default:
		h.first.act(s)
	}
}
