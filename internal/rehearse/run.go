package rehearse

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

// Options are how a rehearsal runs, beside the sale and the room.
type Options struct {
	// Seed draws the visitors' traits and the shop's answers: the same seed plays
	// the same sale.
	Seed uint64
	// Horizon is how long after the last arrival a line that does not clear is
	// followed; 0: a day.
	Horizon time.Duration
	// Progress, if set, is told how each run is going, about every simulated
	// minute, from the run's own goroutine.
	Progress func(Progress)
	// Parallel is how many variants run at once; 0: one per CPU.
	Parallel int

	// ring is the hub's period in the real hub's intervals (hub.go); 0: the
	// rehearsal's own. Tests set the real hub's, 1.
	ring int
	// everyClick plays every request of every shopper, where the rehearsal plays
	// only those that touch the session (playOne). Tests set it.
	everyClick bool
}

// Progress is how far one run has got.
type Progress struct {
	Label              string
	Run                int // its number among the variants, from 0
	Simulated          time.Duration
	Arrived, Visitors  int
	InLine, Inside     int
	LastArrival, Limit time.Duration // when the last visitor arrives, and the horizon
}

// navDelay is how long after the store lets a waiter in its page's request for
// the site reaches the room: the page waits 400 ms (assets/waiting.html's
// admitted()), and the news of the turn and the page's request take about 120 ms
// on their ways over the internet. It is not a multiple of the step on purpose: a
// real request never comes at the instant of a step, and everything a shopper
// does is timed from its entry, so one that did would have the store end each
// walked-away session at a step instead of the step after, a step early.
const navDelay = int64(520 * time.Millisecond)

// Rehearse plays sale against each variant of the room and returns what each did.
// Every variant plays the same people: the same arrivals, each with the same
// traits.
func Rehearse(ctx context.Context, sale Sale, variants []Variant, opt Options) ([]*Result, error) {
	if len(variants) == 0 {
		return nil, errors.New("no room to rehearse")
	}
	if err := sale.Check(); err != nil {
		return nil, err
	}
	sale = sale.withDefaults()
	// Every room is built before any is played, so that a setting the room refuses
	// is said at once, not after the others' sales.
	for _, v := range variants {
		e, err := newEngine(v, time.Time{}, 0, noTicks{}, func([]visitorID) {})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Label, err)
		}
		if e.adapt && len(sale.Shop) == 0 {
			return nil, fmt.Errorf("%s: adapt follows the shop: give a model of it, such as --shop \"40 at once, 250ms\"", v.Label)
		}
	}
	if opt.Horizon <= 0 {
		opt.Horizon = 24 * time.Hour
	}
	par := opt.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	results := make([]*Result, len(variants))
	errs := make([]error, len(variants))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range variants {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], errs[i] = rehearseOne(ctx, &sale, variants[i], i, opt)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}

// noTicks hears nothing of a room's steps.
type noTicks struct{}

func (noTicks) stepped(int, int, int, uint64, int) {}
func (noTicks) target(time.Duration)               {}

// run is one variant's rehearsal.
type run struct {
	ctx   context.Context
	sale  *Sale
	opt   Options
	no    int
	label string
	eng   *engine
	zero  time.Time
	now   int64 // ns since the sale's start

	vis     []visitor
	byID    map[visitorID]int32 // the visitors in line, by their place's id
	events  events
	arr     *arrivals
	hub     *hub
	gap     int64 // between two of a shopper's requests the rehearsal plays
	touches int64 // between two of a shopper's requests that touch its session
	serve   bool  // the shop is modelled: each request is served and measured
	kicked  bool  // a departure asks for an admission step at once
	beat    [1]visitorID
	pcg     *rand.PCG
	traits  *rand.Rand
	shop    *rand.Rand

	inLine, inside int
	clearedAt      int64 // when the line last emptied of people
	rec            recorder
}

func rehearseOne(ctx context.Context, sale *Sale, v Variant, no int, opt Options) (*Result, error) {
	r, err := playOne(ctx, sale, v, no, opt)
	if err != nil {
		return nil, err
	}
	return r.result(v), nil
}

// playOne plays sale against v, and returns the run with every visitor's record.
func playOne(ctx context.Context, sale *Sale, v Variant, no int, opt Options) (*run, error) {
	saleStart := sale.Start
	if saleStart.IsZero() {
		saleStart = firstOpening(&v.Config)
	}
	r := &run{ctx: ctx, sale: sale, opt: opt, no: no, label: v.Label, zero: simZero, byID: map[visitorID]int32{},
		arr: newArrivals(sale.Arrivals), clearedAt: -1}
	r.pcg = rand.NewPCG(0, 0)
	r.traits = rand.New(r.pcg)
	r.shop = rand.New(rand.NewPCG(opt.Seed, 0x5409))
	r.vis = make([]visitor, 0, sale.Visitors())
	r.rec.init(sale)
	eng, err := newEngine(v, saleStart, opt.Seed, r, r.admitted)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.Label, err)
	}
	r.eng = eng
	r.hub = newHub(int64(eng.heartbeatEvery()), int64(eng.queueTTL), step, opt.ring)
	r.serve = len(sale.Shop) > 0
	every := int64(sale.Clicks.Every)
	r.gap, r.touches = every, every
	if !r.serve && !eng.sessionMax && !opt.everyClick {
		// Without a shop to measure, the store sees a shopper's requests only as
		// touches of its session: a request touches it once queue.TouchEvery has
		// passed since the last that did, so a page every E touches it every
		// ceil(TouchEvery/E)·E from the entry. The rehearsal plays only requests that
		// touch: as few as keep the session (one a little under session_ttl after
		// the last), the last that touches before the stay's end, and the last
		// request. The store then holds the session, and ends it, as at every click.
		r.touches = (int64(touchEvery) + every - 1) / every * every
		r.gap = max(1, int64(eng.sessionTTL-touchEvery)/r.touches) * r.touches
	}
	if err := r.play(); err != nil {
		return nil, err
	}
	return r, nil
}

// play runs the sale to its end: everyone gone, or the horizon.
func (r *run) play() error {
	limit := int64(r.sale.Length() + r.opt.Horizon)
	nextProgress := int64(0)
	for t := step; ; t += step {
		r.until(t)
		r.setNow(t)
		if ids := r.hub.due(t); len(ids) > 0 {
			r.eng.beat(ids)
		}
		r.eng.tick()
		if r.arr.left == 0 && r.inLine == 0 && r.inside == 0 && len(r.events) == 0 || t >= limit {
			r.rec.end = t
			r.report(limit)
			return nil
		}
		if t >= nextProgress {
			nextProgress = t + int64(time.Minute)
			if err := r.ctx.Err(); err != nil {
				return err
			}
			r.report(limit)
		}
	}
}

func (r *run) report(limit int64) {
	if r.opt.Progress == nil {
		return
	}
	r.opt.Progress(Progress{Label: r.label, Run: r.no, Simulated: time.Duration(r.now), Arrived: len(r.vis),
		Visitors: r.sale.Visitors(), InLine: r.inLine, Inside: r.inside,
		LastArrival: r.sale.Length(), Limit: time.Duration(limit)})
}

// until plays every arrival and event due at or before t, in time order.
func (r *run) until(t int64) {
	for {
		ta, arrival := r.arr.next()
		te, event := r.events.next()
		switch {
		case arrival && ta <= t && (!event || ta <= te):
			r.setNow(ta)
			r.arr.take()
			r.arrive()
		case event && te <= t:
			e := r.events.pop()
			r.setNow(e.at)
			r.handle(e)
		default:
			return
		}
		if r.kicked {
			// A departure runs an admission step at once, as Room.kick does.
			r.kicked = false
			r.eng.tick()
		}
	}
}

func (r *run) setNow(t int64) {
	r.now = t
	r.eng.at(r.zero.Add(time.Duration(t)))
}

func (r *run) after(d int64, n int32, kind eventKind) {
	r.events.push(event{at: r.now + d, v: n, kind: kind})
}

// arrive is the next visitor's first page load.
func (r *run) arrive() {
	n := int32(len(r.vis))
	r.vis = append(r.vis, visitor{arrived: r.now, admitted: -1, ended: -1,
		traits: drawTraits(r.traits, r.pcg, r.opt.Seed, int(n), r.sale)})
	v := &r.vis[n]
	r.rec.arrival(r.now)
	a := r.eng.arrive()
	v.eta, v.position = a.eta, a.position
	switch a.place {
	case placeWaiting:
		r.keep(v, a)
		r.joinLine(n)
		if v.giveUp >= 0 {
			r.after(v.giveUp, n, evGiveUp)
		}
		if v.sleepAt >= 0 && (v.giveUp < 0 || v.sleepAt < v.giveUp) {
			r.after(v.sleepAt, n, evSleep)
		}
		r.openSocket(n)
	case placeIn, placeThrough:
		r.keep(v, a)
		r.enter(n, a.place == placeThrough)
	default:
		v.state, v.ended = stTurnedAway, r.now
	}
}

// keep is what the browser keeps of an answer: its cookie, and the place's id.
func (r *run) keep(v *visitor, a answer) {
	if a.cookie != nil {
		v.cookie = string(a.cookie)
	}
	if a.id != (visitorID{}) {
		v.id = a.id
	}
}

// joinLine puts visitor n in line, awake, known by its place's id.
func (r *run) joinLine(n int32) {
	v := &r.vis[n]
	if !v.state.inLine() {
		r.inLine++
	}
	v.state = stWaiting
	r.byID[v.id] = n
}

// leaveLine takes visitor n out of line, into state s.
func (r *run) leaveLine(n int32, s state) {
	v := &r.vis[n]
	delete(r.byID, v.id)
	v.state = s
	r.hub.closed(n)
	if s != stWaiting {
		v.cookie = "" // gone for good: the browser's cookie is no longer needed
	}
	if r.inLine--; r.inLine == 0 {
		r.clearedAt = r.now
	}
}

// openSocket is the waiting page opening its socket: the hub hears of it from
// then on. A socket told at once that its visitor is in sets off the navigation.
func (r *run) openSocket(n int32) {
	v := &r.vis[n]
	a := r.eng.socket(v.cookie)
	r.keep(v, a)
	switch a.place {
	case placeWaiting:
		if id := a.id; id != (visitorID{}) {
			r.byID[id] = n
		}
		if epoch, last := r.hub.opened(n, v.id, r.now, r.closes(v)); last >= 0 {
			r.events.push(event{at: last, v: n, epoch: epoch, kind: evBeat})
		}
	case placeIn:
		r.after(navDelay, n, evNavigate)
	}
}

// closes is when visitor v's waiting page closes by itself, its phone asleep or
// the tab closed; -1: it does not.
func (r *run) closes(v *visitor) int64 {
	at := int64(-1)
	if v.giveUp >= 0 {
		at = v.arrived + v.giveUp
	}
	if v.sleepAt >= 0 && !v.slept && (at < 0 || v.sleepAt < v.giveUp) {
		at = v.arrived + v.sleepAt
	}
	if at <= r.now {
		return -1
	}
	return at
}

// admitted is the store announcing admissions from the line, which the hub tells
// each waiter's socket at once: the page loads the site, unless nobody is there.
func (r *run) admitted(ids []visitorID) {
	for _, id := range ids {
		n, ok := r.byID[id]
		if !ok {
			continue // gone: it gave up, or its place moved on
		}
		v := &r.vis[n]
		switch {
		case v.state != stWaiting:
			// Asleep: the store gives the slot back at arrive_ttl, and keeps the turn.
		case v.noShow:
			v.ended = r.now
			r.leaveLine(n, stNoShow)
			r.rec.noShow(r.now)
		default:
			r.after(navDelay, n, evNavigate)
		}
	}
}

func (r *run) handle(e event) {
	n := e.v
	v := &r.vis[n]
	switch e.kind {
	case evNavigate:
		if v.state == stWaiting {
			r.answered(n, r.eng.page(v.cookie))
		}
	case evClick:
		if v.state == stInside {
			r.click(n)
		}
	case evGiveUp:
		if v.state.inLine() {
			v.ended = r.now
			r.leaveLine(n, stGaveUp)
			r.rec.gaveUp(r.now)
		}
	case evSleep:
		if v.state == stWaiting {
			v.state, v.slept = stAsleep, true
			r.hub.closed(n) // the hub hears of it no more
			r.after(v.sleepFor, n, evWake)
		}
	case evWake:
		if v.state == stAsleep {
			r.answered(n, r.eng.poll(v.cookie))
		}
	case evBeat:
		if r.hub.isOpen(n, e.epoch) {
			r.beat[0] = v.id
			r.eng.beat(r.beat[:])
		}
	}
}

// answered is what a page in line does with the answer to its request: let in, it
// is in the shop; still in line (or in line again, its place lost), it waits on
// its socket.
func (r *run) answered(n int32, a answer) {
	v := &r.vis[n]
	switch a.place {
	case placeIn, placeThrough:
		r.leaveLine(n, stWaiting)
		r.keep(v, a)
		r.enter(n, a.place == placeThrough)
	case placeWaiting:
		delete(r.byID, v.id)
		r.keep(v, a)
		r.joinLine(n)
		r.openSocket(n)
	default:
		v.ended = r.now
		r.leaveLine(n, stTurnedAway)
	}
}

// enter lets visitor n into the shop, for its stay; through a suspended room it
// holds no slot, and is simply gone on.
func (r *run) enter(n int32, through bool) {
	v := &r.vis[n]
	if v.admitted < 0 {
		v.admitted = r.now
	}
	if through {
		v.state, v.ended = stLeft, r.now
		return
	}
	v.state, v.leaveAt = stInside, r.now+v.stay
	r.inside++
	r.serveRequests(v)
	r.after(r.nextClick(v)-r.now, n, evClick)
}

// nextClick is when the rehearsal plays shopper v's next request: gap on, and at
// the end of its stay the last that touched its session, then the last.
func (r *run) nextClick(v *visitor) int64 {
	if next := r.now + r.gap; next < v.leaveAt {
		return next
	}
	entered := v.leaveAt - v.stay
	if last := entered + v.stay/r.touches*r.touches; last > r.now && last < v.leaveAt {
		return last
	}
	return v.leaveAt
}

// click is a shopper's next page; at the end of its stay, its last.
func (r *run) click(n int32) {
	v := &r.vis[n]
	a := r.eng.page(v.cookie)
	r.keep(v, a)
	switch a.place {
	case placeIn:
		r.serveRequests(v)
	case placeWaiting:
		// Its session ended (session_max): in line again, at the back.
		r.inside--
		r.joinLine(n)
		r.openSocket(n)
		return
	}
	if r.now < v.leaveAt && a.place == placeIn {
		r.after(r.nextClick(v)-r.now, n, evClick)
		return
	}
	r.inside--
	v.state, v.ended, v.cookie = stLeft, r.now, ""
	if v.checkout && a.place == placeIn {
		r.eng.revoke(v.id)
		r.kicked = true
	}
}

// serveRequests is the shop answering a page's requests, when the shop is
// modelled: each takes the phase's service time, stretched by the shoppers inside
// beyond what the shop serves at once, and, far past that, some fail.
func (r *run) serveRequests(v *visitor) {
	if !r.serve {
		return
	}
	ph := r.sale.shopAt(time.Duration(r.now))
	load := max(1, float64(r.rec.active)/float64(ph.Servers))
	for range r.sale.Clicks.Requests {
		ttfb := time.Duration(float64(ph.Service) * load * (0.5 + r.shop.Float64()))
		failed := r.rec.active > 3*ph.Servers && r.shop.IntN(3) == 0
		r.eng.served(v.id, ttfb, failed)
	}
}

// stepped and target are the room's counters at each admission step (ticks).
func (r *run) stepped(active, waiting, away int, admittedTotal uint64, capacity int) {
	if r.rec.minuteOf(r.now) != r.rec.cur && r.eng != nil {
		p90, n := r.eng.shopP90()
		r.rec.shop(p90, n)
	}
	r.rec.step(r.now, active, waiting, away, admittedTotal, capacity)
}

func (r *run) target(d time.Duration) { r.rec.latencyTarget = d }
