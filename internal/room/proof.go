package room

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// errProofReplayed is a valid proof whose challenge was answered before.
var errProofReplayed = errors.New("challenge already answered")

// challenge stands between a new visitor and the line while proof_of_work is on: a
// visitor invited (a valid pass, or a pass bound into its cookie), or a valid proof
// offered for the first time fleet-wide, goes on to join (done false); anything else
// gets a fresh challenge, or the store's outage (done true, decided). clean says the
// proof came in the address of a browser's page load, which the visitor is then sent
// back to without it once it has its cookie.
//
// The checks cost one SHA-256 and one HMAC (token.CheckProof) before the one store
// call, the once-only check.
func (rm *Room) challenge(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, invited bool) (clean, done bool) {
	bits := d.Settings.ProofOfWork
	if bits == 0 || invited {
		return false, false // the operator's invitation stands for the work (pass.go)
	}
	if v.Proof != "" {
		c, why := keys.CheckProof(v.Proof, bits, v.Now)
		if why == nil {
			first, err := rm.cfg.Store.Once(ctx, c.Key(), c.Expires)
			if err != nil {
				rm.storeError("once", err)
				rm.degrade(d)
				return false, true
			}
			if first {
				return v.ProofInAddress && v.Page, false
			}
			why = errProofReplayed
		}
		if c := rm.cfg.Logger.Check(zap.DebugLevel, "proof of work refused"); c != nil {
			c.Write(zap.String("room", rm.cfg.Name), zap.String("reason", why.Error()))
		}
	}
	rm.challengeNow(d, keys, v.Now)
	return false, true
}

// challengeNow records a fresh challenge of the current difficulty in d.
func (rm *Room) challengeNow(d *Decision, keys *token.Keyring, now time.Time) {
	bits := d.Settings.ProofOfWork
	d.Outcome, d.Difficulty, d.Challenge = Challenged, bits, keys.MintChallenge(bits, now)
}
