package room

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// Visit is what the module read from one request: the facts the room decides on.
type Visit struct {
	Now time.Time
	// Cookie is the room cookie's value as sent, not yet verified.
	Cookie string
	// Pass and Proof are what the request presented, already taken out of it so the
	// upstream never sees them; ProofInAddress says the proof came in the query.
	Pass           string
	Proof          string
	ProofInAddress bool
	// Addr is the client's address, for the per-address caps.
	Addr string
	// Socket says the request opens the waiting page's WebSocket, and CrossSite that
	// another site's page opens it.
	Socket, CrossSite bool
	// Page says the request is a browser's page load, which can be sent to another
	// address (the proof's clean redirect).
	Page bool
	// Preflight says the request is a CORS preflight: nobody's visit.
	Preflight bool
	// Handoff is the hand-off code the request presents, taken out of it; HandoffNew
	// says the request asks for a code for its own place. With either, CrossSite says
	// another site's page sent the request (handoff.go).
	Handoff    string
	HandoffNew bool
	// Key is who the request is for, when the room has a key (key.go): the resolved
	// placeholder, "" when it resolved empty or there is none.
	Key string
}

// Outcome is what a request gets.
type Outcome uint8

const (
	// Through: the request goes on, no cookie, nothing counted (the room is
	// suspended, or a preflight).
	Through Outcome = iota
	// Admitted: the request goes on as the admitted visitor's.
	Admitted
	// Queued: the waiter is told its place (the page, JSON, or its WebSocket).
	Queued
	// Challenged: a new visitor must first send a proof of work.
	Challenged
	// Rejected: turned away (reject or invite_only mode, a cross-site socket).
	Rejected
	// Degraded: the store could not decide; the module fails open or closed.
	Degraded
	// TooMany: over a per-address cap; nothing stored or counted.
	TooMany
	// KeyTooLong: the request's key is longer than token.MaxKey; nothing stored or
	// counted (key.go).
	KeyTooLong
	// Moved: the cookie's place moved to another device (handoff.go).
	Moved
	// CleanRedirect: the browser, which now has its cookie, is sent back to its
	// address without the proof or hand-off code it came with.
	CleanRedirect
	// TellAdmitted: the waiting page's WebSocket of a visitor who is in, told so and
	// closed rather than handed on.
	TellAdmitted
	// WaitingSocket: the waiting page's WebSocket of a waiter, held by the room.
	WaitingSocket
	// HandoffCode: the hand-off code minted for the visitor's place (Handoff, until
	// HandoffExpires), a waiter's or a visitor's who is in (Place).
	HandoffCode
	// HandoffBusy: a code was asked for while this instance had given out all it may
	// for now (timing.go): none is given, and the request is to come back.
	HandoffBusy
	// CrossSiteRefused: another site's page opened the waiting socket or asked for a
	// hand-off code; refused, nothing taken (CrossSiteHandoff says which).
	CrossSiteRefused
)

// Decision is what a request gets, with what the module must apply.
type Decision struct {
	Outcome  Outcome
	Settings *settings.Snapshot

	// Visitor is the admitted or queued visitor; Waited how long an admitted one
	// waited in line (negative: this request does not say).
	Visitor queue.VisitorID
	Waited  time.Duration

	// CookieExpires is when the cookie to set (Cookie) expires; an admitted request
	// whose cookie is set has just been confirmed with the store.
	CookieExpires time.Time
	sealed        [token.Text]byte // the cookie's value: sealed[:sealedLen]
	sealedLen     int

	// clean says the browser is to be sent back to its address (CleanRedirect) once
	// the visitor has its place.
	clean bool
	// Status is the store's word on a queued waiter.
	Status queue.Status
	// Reason says why a visitor let in before is queued anew, and PassInvalid that
	// the pass a queued or rejected visitor presented did not hold (see Tell).
	Reason      string
	PassInvalid bool
	// Challenge, of Difficulty bits, is what a challenged visitor must solve.
	Challenge  string
	Difficulty int
	// RetryAfter is when a request over a per-address cap may come back.
	RetryAfter time.Duration
	// CrossSiteHandoff says a CrossSiteRefused request asked for a hand-off code (not
	// the waiting socket); crossSite is set where the refusal is decided.
	CrossSiteHandoff bool
	crossSite        bool
	// Keyed says the request came with a key (key.go); keyID is its visitor's id.
	// keyedPlace is an id known to be a key's, which a cookie set for it says
	// (token.Token.Keyed): the key's, or, for a request without one, its cookie's or
	// a keyed hand-off's.
	Keyed         bool
	keyID         queue.VisitorID
	hasKeyID      bool
	keyedPlace    queue.VisitorID
	hasKeyedPlace bool
	// Handoff is the code minted for the visitor's place when the request asked for
	// one, valid until HandoffExpires; HandoffInvalid says the code the request
	// presented did not hold, and HandoffRefused that it came from another site to
	// a device that holds a place, which keeps it (handoff.go). HandoffBusy says a
	// code was asked for while this instance had given out all it may for now
	// (timing.go): the request gets none, and is to come back.
	Handoff        string
	HandoffExpires time.Time
	HandoffInvalid bool
	HandoffRefused bool
	handoffBusy    bool

	// Place is the state of the visitor's place the answer is about: Admitted or
	// Queued for the answers that follow from one (Admitted, Queued, CleanRedirect,
	// TellAdmitted, WaitingSocket, HandoffCode, HandoffBusy), else Unknown.
	Place queue.State
	// joined is when a queued place was made, and passPlace that it was with a
	// pass: what the waiter's receipt says (draws.go).
	joined    time.Time
	passPlace bool
}

// setCookie seals tok into the decision's cookie.
func (d *Decision) setCookie(keys *token.Keyring, tok token.Token) {
	tok.Keyed = d.hasKeyedPlace && tok.ID == d.keyedPlace
	d.sealedLen, d.CookieExpires = len(keys.AppendSealed(d.sealed[:0], tok)), tok.Expires
}

// Cookie is the cookie value to set, or nil when the request sets none. It is kept
// in the decision's own array, which holds what a cookie can be, so that a decision
// on the module's stack stays there.
func (d *Decision) Cookie() []byte {
	if d.sealedLen == 0 {
		return nil
	}
	return d.sealed[:d.sealedLen]
}

// Decide decides what the request v describes gets, making the store calls that
// takes: the session's touch, the waiter's status, the join. The module turns the
// decision into the response.
func (rm *Room) Decide(ctx context.Context, v *Visit, d *Decision) {
	rm.decide(ctx, v, d)
	rm.mintHandoff(v, d)
	rm.cleanHandoff(v, d)
	d.answer(v)
}

// answer gives a decided place its answer: the one outcome the module carries out.
// What the request came for goes first: the clean address a browser is sent back to
// once it has its cookie, then the waiting socket, then a hand-off code asked for.
func (d *Decision) answer(v *Visit) {
	switch d.Outcome {
	case Admitted:
		d.Place = queue.Admitted
	case Queued:
		d.Place = queue.Queued
	}
	switch {
	case d.Outcome == Rejected && d.crossSite:
		d.Outcome, d.CrossSiteHandoff = CrossSiteRefused, v.HandoffNew
	case d.Outcome != Admitted && d.Outcome != Queued:
	case d.clean:
		d.Outcome = CleanRedirect
	case v.Socket && d.Outcome == Admitted:
		// The waiting page's socket is the room's, never the shop's, however its
		// visitor came to be let in: its place may have been lost (a reset, a flushed
		// store), it may be a stale tab, or the first the room hears of the visitor.
		d.Outcome = TellAdmitted
	case v.Socket:
		d.Outcome = WaitingSocket
	case d.Handoff != "":
		d.Outcome = HandoffCode
	case d.handoffBusy:
		d.Outcome = HandoffBusy
	}
}

func (rm *Room) decide(ctx context.Context, v *Visit, d *Decision) {
	now := v.Now
	s := rm.Settings(now)
	*d = Decision{Settings: s, Waited: -1}
	if s.Mode == queue.ModeSuspended || v.Preflight {
		d.Outcome = Through // the room is off, or no visitor asks
		return
	}
	keys := rm.keys.Load()
	if keys == nil {
		// No secret yet: the store has been down since start. Nobody can be verified.
		rm.degrade(d)
		return
	}
	if !keyOf(v, d, keys) {
		return
	}

	// Another site's socket is refused before its code is looked at: taking the code
	// would spend it, move the place and set a cookie for a request that then gets 403.
	if refusedHandoff(v, d) || v.Handoff != "" && (refusedSocket(v, d) || rm.takeHandoff(ctx, v, d, keys)) {
		return
	}

	var invitedBy token.Token // the cookie, when it holds a pass (see rejoinInvited)
	reason := ""              // why a known visitor is new again (sessionmax.go)
	tok, opened := keys.Open(v.Cookie, now)
	if opened && tok.Keyed && !d.hasKeyID {
		d.keyedPlace, d.hasKeyedPlace = tok.ID, true
	}
	if opened && !d.cookieFor(tok) && !tok.Keyed && (refusedSocket(v, d) || rm.followLogIn(ctx, v, d, keys, tok)) {
		return
	}
	if opened && d.cookieFor(tok) {
		if tok.Pass {
			invitedBy = tok
		}
		switch tok.State {
		case queue.Admitted:
			var decided bool
			if decided, reason = rm.decideAdmitted(ctx, v, d, keys, tok); decided {
				return
			}
		case queue.Queued:
			if refusedSocket(v, d) || rm.decideQueued(ctx, v, d, keys, tok) {
				return
			}
			// The place was lost (queue_ttl): a new visitor, at the back.
		}
	}
	if refusedSocket(v, d) {
		return
	}
	if d.hasKeyID {
		decided, why := rm.decideKeyed(ctx, v, d, keys)
		if decided {
			return
		}
		if why != "" {
			reason = why
		}
	}
	rm.decideNew(ctx, v, d, keys, invitedBy, reason)
}

// decideAdmitted decides on a visitor whose cookie says admitted, and reports
// whether it did; if not, the visitor is new again, and reason says whether its
// session ended at session_max.
func (rm *Room) decideAdmitted(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, tok token.Token) (decided bool, reason string) {
	now, s := v.Now, d.Settings
	if s.SessionOver(tok.Since, now) {
		since, resumed := rm.resumedSince(ctx, s, tok, now)
		if !resumed {
			rm.endSession(ctx, tok.ID)
			return false, ReasonSessionMax
		}
		tok.Since = since // the admitted cookie below carries the store's start
	}
	if tok.Keyed && !d.hasKeyID && !rm.keyedSessionHolds(ctx, v, tok) { // key.go
		return false, ""
	}
	if rm.touchedRecently(tok.ID, now) {
		d.Outcome, d.Visitor, d.Waited = Admitted, tok.ID, tok.Waited
		return true, ""
	}
	if socketOwesArrival(v, s) && rm.decideAdmittedSocket(ctx, v, d, keys, tok) { // arrive.go
		return true, ""
	}
	active, err := rm.cfg.Store.Touch(ctx, tok.ID, now)
	if err != nil {
		// The cookie is verified: an admitted visitor keeps passing in an outage, and
		// asks a hung store again only after TouchEvery, not on every request.
		rm.storeError("touch", err)
		rm.markTouched(tok.ID, now)
		d.Outcome, d.Visitor, d.Waited = Admitted, tok.ID, tok.Waited
		return true, ""
	}
	if !active {
		// The no-show first: its Status brings the waiter back, which says so once.
		if rm.decideNoShow(ctx, v, d, keys, tok) || rm.decideMoved(ctx, v, d, tok.ID) { // arrive.go, handoff.go
			return true, ""
		}
		// Session lapsed, revoked or removed: a new visitor, at the back.
		if sessionMaxLapsed(s, tok.Since, now) {
			return false, ReasonSessionMax
		}
		return false, ""
	}
	rm.admit(d, keys, tok, now)
	return true, ""
}

// decideQueued decides on a visitor whose cookie says queued, and reports whether it
// did; if not, the place was lost and the visitor is new again.
func (rm *Room) decideQueued(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, tok token.Token) bool {
	now, s := v.Now, d.Settings
	st, err := rm.status(ctx, v, tok.ID) // arrive.go
	if err != nil {
		rm.degrade(d)
		return true
	}
	if (st.State == queue.Admitted || st.State == queue.Queued) && rm.invitedOut(ctx, tok, s) {
		d.Outcome = Rejected
		return true
	}
	switch st.State {
	case queue.Admitted:
		if !rm.touchedRecently(tok.ID, now) {
			rm.cfg.Metrics.Waited(now.Sub(tok.Since))
			rm.cfg.History.Wait(now, now.Sub(tok.Since))
		}
		tok.Waited, tok.Since = now.Sub(tok.Since), now
		rm.admit(d, keys, tok, now)
		rm.arrived(ctx, v, s, tok.ID) // arrive.go
		return true
	case queue.Queued:
		rm.holdPlace(d, keys, tok.ID, tok.Since, now, tok.Pass)
		rm.queued(v, d, tok.ID, st, "", passNone)
		return true
	case queue.Moved:
		rm.moved(d, tok.ID) // handoff.go
		return true
	}
	return false
}

// decideNew decides on a new visitor: the per-address cap, the proof of work, the
// pass, and the join. invitedBy is the cookie of a visitor invited before, reason why
// a visitor let in before is new again.
func (rm *Room) decideNew(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, invitedBy token.Token, reason string) {
	now, s := v.Now, d.Settings
	invited := rm.rejoinInvited(ctx, invitedBy) // pass.go
	passed := !invited && s.ProofOfWork > 0 && passOpens(keys, v.Pass, now)
	// The per-address cap is the cheap refusal, so it comes before the proof's
	// once-only check: a proof answered 429 is not spent. A visitor then challenged
	// has not joined, so its join is given back.
	counted := ""
	if cap := rm.cfg.PerIP; cap.MaxJoins > 0 {
		if !rm.ips.allowJoin(v.Addr, now, cap.MaxJoins, cap.JoinWindow) {
			d.Outcome, d.RetryAfter = TooMany, cap.JoinWindow
			return
		}
		counted = v.Addr
	}
	clean, done := rm.challenge(ctx, v, d, keys, invited || passed) // proof.go
	if done {
		rm.ips.giveBack(counted, now)
		return
	}
	id := d.newVisitorID() // key.go
	st, check, err := rm.joinNew(ctx, keys, id, v.Pass, invited, passed, now, s)
	for n := 1; err == nil && st.Known; n++ {
		if rm.keyedJoined(ctx, v, d, keys, st, invited || check == passValid, counted, n) {
			return
		}
		st, check, err = rm.joinNew(ctx, keys, id, v.Pass, invited, passed, now, s)
	}
	switch {
	case err != nil:
		rm.storeError("join", err)
		rm.degrade(d)
	case check == passSpent:
		rm.ips.giveBack(counted, now)
		rm.challengeNow(d, keys, now)
	case st.State == queue.Rejected:
		if c := rm.cfg.Logger.Check(zap.DebugLevel, "visitor turned away"); c != nil {
			c.Write(zap.String("room", rm.cfg.Name), zap.String("mode", s.Mode))
		}
		d.Outcome, d.PassInvalid = Rejected, check == passInvalid
	case st.State == queue.Admitted:
		rm.cfg.Metrics.Admitted(1)
		var by queue.ByReason
		if check == passValid {
			by[queue.ReasonPass] = 1
		} else {
			by[queue.ReasonInOrder] = 1
		}
		rm.cfg.Metrics.AdmittedBy(by)
		rm.admit(d, keys, token.Token{ID: id, Since: now, Pass: invited || check == passValid}, now)
		d.Waited, d.clean = 0, clean
	default:
		rm.cfg.Metrics.Queued()
		if c := rm.cfg.Logger.Check(zap.DebugLevel, "visitor queued"); c != nil {
			c.Write(zap.String("room", rm.cfg.Name), zap.Stringer("visitor", id), zap.Int("position", st.Position))
		}
		rm.holdPlace(d, keys, id, now, now, invited || check == passValid)
		rm.queued(v, d, id, st, reason, check)
		d.clean = clean
	}
}

// admit gives tok's visitor a fresh admitted cookie (admitted at tok.Since, having
// waited tok.Waited, with or without a pass) and records that its session was just
// confirmed with the store.
func (rm *Room) admit(d *Decision, keys *token.Keyring, tok token.Token, now time.Time) {
	rm.letIn(d, keys, tok, now)
	rm.markTouched(tok.ID, now)
	if d.hasKeyID && tok.ID == d.keyID && d.Settings.SessionMax > 0 {
		rm.keyedSince.Mark(tok.ID, tok.Since) // key.go
	}
}

// letIn gives tok's visitor a fresh admitted cookie, as admit does, on a session
// confirmed before: it records no confirmation of its own.
func (rm *Room) letIn(d *Decision, keys *token.Keyring, tok token.Token, now time.Time) {
	tok.State, tok.Expires = queue.Admitted, now.Add(d.Settings.SessionTTL)
	d.setCookie(keys, tok)
	d.Outcome, d.Visitor, d.Waited = Admitted, tok.ID, tok.Waited
}

// holdPlace gives waiter id (queued since, with a pass or not) a fresh queued cookie.
//
// A device that holds a key's place without presenting the key (it opened the key's
// hand-off code: a kiosk) holds it only while it keeps the place alive itself: its
// cookie lasts as long as a place lives after it was last heard from
// (queue.Limits.Keep: away_ttl, or queue_ttl when nobody is kept away), from this
// request, which heard from it, and each of its requests renews it. The key's id is
// the same for all the key's places, and the store keeps no start of a queued place
// the cookie could be checked against; so a device gone quiet has lost its hold by
// the time the place it was given could have lapsed, and does not come back to a
// later place of the key's (its socket's "leave" would remove it). The key's own
// devices keep token.QueuedLife: the key is the place.
func (rm *Room) holdPlace(d *Decision, keys *token.Keyring, id queue.VisitorID, since, now time.Time, pass bool) {
	life := token.QueuedLife
	if d.hasKeyedPlace && id == d.keyedPlace && !d.hasKeyID {
		life = d.Settings.Limits().Keep()
	}
	d.setCookie(keys, token.Token{State: queue.Queued, ID: id, Since: since, Expires: now.Add(life), Pass: pass, Waited: -1})
	d.joined, d.passPlace = since, pass
}

// Tell is what the visitor d was decided for is told: a queued waiter its place, as
// the store call made for it saw the room; a rejected visitor that it was turned
// away; a degraded one that the room is unavailable. It is built only for the
// answers that carry it, after the decision.
func (rm *Room) Tell(d *Decision, now time.Time) page.View {
	var v page.View
	switch {
	case d.Place == queue.Queued:
		v = rm.statusView(d.Status, d.Settings, now)
		v.Reason = d.Reason
		rm.tellReceipt(&v, d, now)
	case d.Outcome == Rejected:
		v = rm.rejectedView(d.Settings)
	case d.Outcome == Moved:
		v = rm.movedView(d.Settings)
	default:
		return rm.unavailableView(d.Settings)
	}
	if d.PassInvalid {
		v.Pass = "invalid"
	}
	switch {
	case d.HandoffInvalid:
		v.Handoff = "invalid"
	case d.HandoffRefused:
		v.Handoff = "refused"
	}
	return v
}

// queued records a waiter's place in d, with what its answer says: whether the pass
// it presented held, and why a visitor let in before is queued anew. A WebSocket
// has no answer to say either in: the page that opens one was told already.
func (rm *Room) queued(v *Visit, d *Decision, id queue.VisitorID, st queue.Status, reason string, check passCheck) {
	d.Outcome, d.Visitor, d.Status = Queued, id, st
	if v.Socket {
		return
	}
	d.PassInvalid, d.Reason = check == passInvalid, reason
}

// degrade records that the store could not decide.
func (rm *Room) degrade(d *Decision) {
	d.Outcome = Degraded
}

// refusedSocket refuses a waiting-page WebSocket opened from another site's page. It
// runs before the room stores anything for the request (a place, a heard-from time,
// a cookie): the upgrade would refuse it anyway (see push.CrossOrigin), and a refused
// request must leave no trace.
func refusedSocket(v *Visit, d *Decision) bool {
	if !v.Socket || !v.CrossSite {
		return false
	}
	d.Outcome, d.crossSite = Rejected, true
	return true
}
