package waitingroom

import (
	"net/http"
	"net/url"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// How a visitor presents a pass (docs/passes.md).
const (
	passParam  = "waiting_room_pass"
	passHeader = "Waiting-Room-Pass"
)

// maxPassText bounds what is looked at of a presented pass: anything longer is
// invalid without being decoded.
const maxPassText = 256

// takePass returns the pass the request presents, if any, and removes it from the
// request, so the upstream never sees it: the header, and the query parameter.
func takePass(r *http.Request) string {
	var pass string
	if vs, ok := r.Header[passHeader]; ok {
		if len(vs) > 0 {
			pass = vs[0]
		}
		delete(r.Header, passHeader)
	}
	if raw, found := takeParam(r, passParam); found && pass == "" {
		pass, _ = url.QueryUnescape(raw)
	}
	return pass
}

// passCheck is what became of a presented pass.
type passCheck uint8

const (
	passNone    passCheck = iota // none presented
	passValid                    // valid, and a use was counted
	passInvalid                  // used up, expired, forged, of another room or oversized
	// passSpent: a valid pass, all its uses spent, which stood for the proof of work
	// (passOpens): its holder is challenged now, as any new visitor without a proof.
	passSpent
)

// joinNew joins a new visitor, with the pass it presented if any. A pass that does
// not hold makes an ordinary new visitor (in invite_only mode: one turned away, unless
// invited: its cookie held a pass, and the place or session it had is gone, so it
// joins the back of the line without using a pass again).
//
// unproven says the visitor skipped the proof of work on the strength of its pass
// alone (see challenge): if the pass turns out spent, nothing is joined (passSpent).
func (h *Handler) joinNew(r *http.Request, keys *token.Keyring, id queue.VisitorID, text string, invited, unproven bool, now time.Time, p policy) (queue.Status, passCheck, error) {
	lim := h.limitsFor(p)
	check := passNone
	if text != "" && p.mode != queue.ModePassthrough {
		check = passInvalid
		if len(text) <= maxPassText {
			if pass, ok := keys.OpenPass(text, now); ok {
				st, counted, err := h.room.store.JoinPass(r.Context(), id, queue.PassUse{ID: pass.IDString(), Uses: pass.Uses, Expires: pass.Expires}, now, lim)
				if err != nil || counted {
					return st, passValid, err
				}
			}
		}
	}
	if check == passInvalid && unproven {
		return queue.Status{}, passSpent, nil
	}
	if p.mode == queue.ModeInviteOnly && !invited {
		return queue.Status{State: queue.Rejected}, check, nil
	}
	st, err := h.room.store.Join(r.Context(), id, now, lim)
	return st, check, err
}

// passOpens reports whether text is a valid pass of the room (signed, not expired),
// whether or not it has uses left: the cost of a signature check, no store call.
func passOpens(keys *token.Keyring, text string, now time.Time) bool {
	if text == "" || len(text) > maxPassText {
		return false
	}
	_, ok := keys.OpenPass(text, now)
	return ok
}

// rejoinInvited reports whether a visitor whose cookie holds a pass, and who is new
// again (the place or the session it had is gone), may join as invited without using
// a pass: once per cookie, fleet-wide, so that copies of one invited cookie do not
// each make a place in an invite-only room (or each skip the proof of work).
func (h *Handler) rejoinInvited(r *http.Request, tok token.Token) bool {
	if !tok.Pass {
		return false
	}
	first, err := h.room.store.Once(r.Context(), "rejoin:"+tok.ID.String(), tok.Expires)
	if err != nil {
		h.room.storeError("once", err)
		return false
	}
	return first
}

// invitedOut reports whether a visitor with tok may not go on under p: in invite_only
// mode, a waiter who came without a pass. (Visitors admitted before the room became
// invite-only keep their session.) Such a waiter is taken out of the line.
func (h *Handler) invitedOut(r *http.Request, tok token.Token, p policy) bool {
	if p.mode != queue.ModeInviteOnly || tok.Pass {
		return false
	}
	if _, err := h.room.store.Leave(r.Context(), tok.ID); err != nil {
		h.room.storeError("leave", err)
	}
	h.room.forgetTouched(tok.ID)
	return true
}

// serveJoined answers a visitor just queued as serveQueued does, saying in JSON
// that the pass it presented did not hold, or why a visitor let in before is queued
// anew (reason: see sessionmax.go). A WebSocket has no answer to say either in: the
// page that opens one was told already.
func (h *Handler) serveJoined(w http.ResponseWriter, r *http.Request, id queue.VisitorID, st queue.Status, p policy, check passCheck, reason string) error {
	if check != passInvalid && reason == "" || push.IsWaitingSocket(r) {
		return h.serveQueued(w, r, id, st, p)
	}
	v := h.statusView(st, p)
	if check == passInvalid {
		v.Pass = "invalid"
	}
	v.Reason = reason
	return h.respond(w, r, h.StatusCode, v)
}

// serveRejectedPass is serveRejected, saying in JSON that the pass did not hold.
func (h *Handler) serveRejectedPass(w http.ResponseWriter, r *http.Request, p policy, check passCheck) error {
	v := h.rejectedView(p)
	if check == passInvalid {
		v.Pass = "invalid"
	}
	return h.respond(w, r, h.RejectStatusCode, v)
}
