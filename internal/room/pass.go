package room

import (
	"context"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// MaxPassText bounds what is looked at of a presented pass: anything longer is
// invalid without being decoded.
const MaxPassText = 256

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
func (rm *Room) joinNew(ctx context.Context, keys *token.Keyring, id queue.VisitorID, text string, invited, unproven bool, now time.Time, s *settings.Snapshot) (queue.Status, passCheck, error) {
	lim := rm.drawn(ctx, s, now, false, 0) // a draw is committed before its first entrant, closed before the first admission after
	check := passNone
	if text != "" && s.Mode != queue.ModePassthrough {
		check = passInvalid
		if len(text) <= MaxPassText {
			if pass, ok := keys.OpenPass(text, now); ok {
				st, counted, err := rm.cfg.Store.JoinPass(ctx, id, queue.PassUse{ID: pass.IDString(), Uses: pass.Uses, Expires: pass.Expires}, now, lim)
				if err != nil || counted {
					return st, passValid, err
				}
			}
		}
	}
	if check == passInvalid && unproven {
		return queue.Status{}, passSpent, nil
	}
	if s.Mode == queue.ModeInviteOnly && !invited {
		return queue.Status{State: queue.Rejected}, check, nil
	}
	st, err := rm.cfg.Store.Join(ctx, id, now, lim)
	return st, check, err
}

// passOpens reports whether text is a valid pass of the room (signed, not expired),
// whether or not it has uses left: the cost of a signature check, no store call.
func passOpens(keys *token.Keyring, text string, now time.Time) bool {
	if text == "" || len(text) > MaxPassText {
		return false
	}
	_, ok := keys.OpenPass(text, now)
	return ok
}

// rejoinInvited reports whether a visitor whose cookie holds a pass, and who is new
// again (the place or the session it had is gone), may join as invited without using
// a pass: once per cookie, fleet-wide, so that copies of one invited cookie do not
// each make a place in an invite-only room (or each skip the proof of work).
func (rm *Room) rejoinInvited(ctx context.Context, tok token.Token) bool {
	if !tok.Pass {
		return false
	}
	first, err := rm.cfg.Store.Once(ctx, "rejoin:"+tok.ID.String(), tok.Expires)
	if err != nil {
		rm.storeError("once", err)
		return false
	}
	return first
}

// invitedOut reports whether a visitor with tok may not go on under s: in invite_only
// mode, a waiter who came without a pass. (Visitors admitted before the room became
// invite-only keep their session.) Such a waiter is taken out of the line.
func (rm *Room) invitedOut(ctx context.Context, tok token.Token, s *settings.Snapshot) bool {
	if s.Mode != queue.ModeInviteOnly || tok.Pass {
		return false
	}
	if _, err := rm.cfg.Store.Leave(ctx, tok.ID); err != nil {
		rm.storeError("leave", err)
	}
	rm.forgetTouched(tok.ID)
	return true
}
