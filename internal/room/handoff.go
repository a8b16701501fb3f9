package room

import (
	"context"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// Moving a place to another device (docs/people-and-devices.md).
//
// The first device asks for a code for its own place (Visit.HandoffNew: the page's
// button, or a JSON client's header) and shows it as a link; the code is signed with
// the room's secret (token.Handoff) and names the visitor, a nonce and an expiry ten
// minutes on. The second device opens the link (Visit.Handoff). The room checks the
// code, spends its nonce with the store's once-only check (fleet-wide: a code is used
// once however many instances see it), and moves the place: queue.Store.Move gives
// it to a fresh id, in one store step, keeping the ticket and position or the
// admitted session, and marks the old id Moved. The second device gets a cookie for
// the new id; the first device's cookie names an id that holds nothing, and every
// request it makes is told the place moved (Outcome Moved) while the mark lasts, then
// it is an unknown id, a new visitor like any. Nothing the first device can do puts
// it back on the place: its cookie is for an id the store no longer gives anything.
//
// This instance stops honouring the old id at once (its confirmed-session cache is
// told, and its waiting sockets are told the place is lost); another instance that
// confirmed the old id's session keeps honouring it until its next touch, at most
// TouchEvery later, which then fails and finds the mark.
//
// A keyed visitor (Visit.Key) is its key, whatever device presents it: its id is the
// key's, so the place is not renamed (the key would still name the old id). The new
// device gets a cookie for the same id, and every device presenting the key stays the
// same person. A new device that does not present the key holds the key's place
// (which its cookie names only by the key's id) while it keeps asking, and its
// session only, once admitted (holdPlace, keyedSessionHolds). A device that presents
// a key takes no code: it is its key's visitor, so a code for another place would
// hand a place from one person to another.
//
// Another site can link a visitor to a code it got for its own place: a link is a
// navigation, which any page may start. A device that holds a place of its own
// (queued or admitted) and follows a link from another site's page (Visit.CrossSite)
// does not take the code: the code is not spent, the device keeps its place and is
// told so (Decision.HandoffRefused). The visitor's own hand moves a place: the code
// scanned or pasted into the address bar, which the browser says is no site's. A
// device with no place takes a code from any link: it has nothing to lose.
//
// A code that does not hold (forged, cut, oversized, another room's, expired, used,
// or for a place that is gone) is ignored with a note (Decision.HandoffInvalid): the
// request is decided as if it had none, which for a device with no cookie makes an
// ordinary new visitor, never a copy of the place.

// MaxHandoffText bounds what is looked at of a presented code: anything longer is
// invalid without being decoded.
const MaxHandoffText = 256

// refusedHandoff refuses a request for a code made from another site's page: a code
// is the place itself, and only the room's own page may ask for one.
func refusedHandoff(v *Visit, d *Decision) bool {
	if !v.HandoffNew || !v.CrossSite {
		return false
	}
	d.Outcome, d.crossSite = Rejected, true
	return true
}

// takeHandoff decides on a request that presents a hand-off code, and reports whether
// it did; if not, the code did not hold (d.HandoffInvalid) and the request is decided
// as one without it.
func (rm *Room) takeHandoff(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring) bool {
	now, s := v.Now, d.Settings
	var h token.Handoff
	ok := false
	if len(v.Handoff) <= MaxHandoffText {
		h, ok = keys.OpenHandoff(v.Handoff, now)
	}
	if !ok {
		d.HandoffInvalid = true
		return false
	}
	if d.hasKeyID {
		// A device that presents a key is its key's visitor, whatever link it opens:
		// a code for the key's own place changes nothing, and another visitor's place
		// is not handed to another person. The code is left unspent for a device
		// without a key.
		d.HandoffInvalid = h.ID != d.keyID
		return false
	}
	if v.CrossSite && rm.holdsPlace(ctx, v, keys) {
		d.HandoffRefused = true
		return false
	}
	first, err := rm.cfg.Store.Once(ctx, "handoff:"+h.NonceString(), h.Expires)
	if err != nil {
		rm.storeError("once", err)
		rm.degrade(d)
		return true
	}
	if !first {
		d.HandoffInvalid = true
		return false
	}
	to := h.ID
	var st queue.Status
	if h.Keyed {
		d.keyedPlace, d.hasKeyedPlace = h.ID, true
		st, err = rm.cfg.Store.Status(ctx, h.ID, now)
		ok = st.State == queue.Queued || st.State == queue.Admitted
	} else {
		to = queue.NewVisitorID()
		st, ok, err = rm.cfg.Store.Move(ctx, h.ID, to, now, rm.limitsOf(s))
	}
	if err != nil {
		rm.storeError("handoff", err)
		rm.degrade(d)
		return true
	}
	if !ok {
		d.HandoffInvalid = true
		return false
	}
	if !h.Keyed {
		rm.forgetTouched(h.ID)
		rm.hub.Lose(h.ID)
	}
	rm.cfg.Metrics.Handoff()
	rm.giveUpOwnPlace(ctx, v, keys, h.ID, to)
	if st.State == queue.Admitted {
		if !h.Keyed {
			rm.cfg.Metrics.AdmittedBy(queue.ByReason{queue.ReasonHandoff: 1})
		}
		rm.admit(d, keys, token.Token{ID: to, Since: h.Since, Pass: h.Pass, Waited: -1}, now)
		d.Waited = -1
	} else {
		rm.holdPlace(d, keys, to, h.Since, now, h.Pass)
		rm.queued(v, d, to, st, "", passNone)
	}
	d.clean = v.Page
	return true
}

// holdsPlace reports whether the request's cookie names a place the store holds,
// queued or admitted. A store that cannot say is taken to hold it: the request is
// then decided without the code, and the code is kept for a request that can.
func (rm *Room) holdsPlace(ctx context.Context, v *Visit, keys *token.Keyring) bool {
	own, ok := keys.Open(v.Cookie, v.Now)
	if !ok {
		return false
	}
	st, err := rm.cfg.Store.Status(ctx, own.ID, v.Now)
	if err != nil {
		rm.storeError("status", err)
		return true
	}
	return st.State == queue.Queued || st.State == queue.Admitted
}

// giveUpOwnPlace lets go of the place the device that took a moved place held of
// its own, if any (its cookie names another id than the place it took): a device is
// one visitor, and its cookie is about to name the moved place, so its own would
// only stand in line for nobody until queue_ttl. A store error is only logged: the
// place then lapses as an abandoned one does.
func (rm *Room) giveUpOwnPlace(ctx context.Context, v *Visit, keys *token.Keyring, moved, to queue.VisitorID) {
	own, ok := keys.Open(v.Cookie, v.Now)
	if !ok || own.ID == moved || own.ID == to {
		return
	}
	left, err := rm.cfg.Store.Leave(ctx, own.ID)
	if err != nil {
		rm.storeError("leave", err)
		return
	}
	if left {
		rm.forgetTouched(own.ID)
		rm.hub.Lose(own.ID)
	}
}

// decideMoved decides on a visitor whose admitted cookie the store no longer
// confirms, in case its place moved to another device, and reports whether it did.
func (rm *Room) decideMoved(ctx context.Context, v *Visit, d *Decision, id queue.VisitorID) bool {
	st, err := rm.cfg.Store.Status(ctx, id, v.Now)
	if err != nil || st.State != queue.Moved {
		return false
	}
	rm.moved(d, id)
	return true
}

// moved records that visitor id's place moved to another device.
func (rm *Room) moved(d *Decision, id queue.VisitorID) {
	rm.forgetTouched(id)
	d.Outcome, d.Visitor = Moved, id
}

// mintHandoff gives the visitor d was decided for, queued or admitted, a code for its
// place, when the request asked for one (Visit.HandoffNew). The place is the one the
// request's cookie names, or the cookie the decision sets. Past what this instance
// may give out for now (timing.go), it gives none and says so (the HandoffBusy outcome).
func (rm *Room) mintHandoff(v *Visit, d *Decision) {
	if !v.HandoffNew || v.Socket || (d.Outcome != Admitted && d.Outcome != Queued) {
		return
	}
	keys := rm.keys.Load()
	if keys == nil {
		return
	}
	value := v.Cookie
	if c := d.Cookie(); c != nil {
		value = string(c)
	}
	tok, ok := keys.Open(value, v.Now)
	if !ok || tok.ID != d.Visitor {
		return
	}
	if !rm.handoffs.AllowN(v.Now, 1) { // timing.go
		d.handoffBusy = true
		return
	}
	h := token.NewHandoff(tok.ID, tok.Since, v.Now, tok.Pass, tok.Keyed || v.Key != "")
	d.Handoff, d.HandoffExpires = keys.MintHandoff(h), h.Expires
}

// cleanHandoff sends a browser let in with a code in its address that did not hold,
// or was refused, to the address without it before the shop's page loads: the shop's
// page would keep it in the address bar and its history. A waiting page keeps the
// address and says the code did not hold, or was refused; its script takes the code
// out of the address bar.
func (rm *Room) cleanHandoff(v *Visit, d *Decision) {
	if (d.HandoffInvalid || d.HandoffRefused) && v.Page && d.Outcome == Admitted {
		d.clean = true
	}
}

// movedView is what a device whose place moved to another device is told. It
// offers nothing to do: the place is the other device's now.
func (rm *Room) movedView(s *settings.Snapshot) page.View {
	return page.View{Room: rm.cfg.Name, Status: "moved", Capacity: s.Capacity, RefreshSeconds: s.RefreshSeconds()}
}
