package push

import "time"

// Every timing of the waiting sockets, in one place: "pushes are late" starts here.

// Push timing for waiting WebSockets.
const (
	// writeTimeout bounds one message write, so a stalled client costs a goroutine for
	// seconds, not forever.
	writeTimeout = 5 * time.Second

	// pushEvery is how often the hub recomputes the positions of its waiters (one
	// Positions call for all of them) and pushes those that changed.
	pushEvery = 500 * time.Millisecond
	// resendEvery is how often the hub looks for sockets owed a message because they
	// heard nothing for resendAfter. A tick costs only what it resends (see
	// pushRound.resendDue), so it can be short, which lets a resend go out close to
	// maxSilence (at 100,000 waiters, each tenth of a second closer is 3,000 writes a
	// second fewer) and spreads the writes over the second.
	resendEvery = 20 * time.Millisecond
	// maxSilence is the longest a waiter goes without a message, changed or not, so a
	// page can tell a live connection from a stuck one.
	maxSilence = 2 * time.Second
	// resendSlack is how late the hub may run, on a busy machine, before a waiter's
	// silence passes maxSilence: an on-time resend goes out this much before it.
	resendSlack = 250 * time.Millisecond
	// staleAfter is how long after the store's last answer the hub goes on resending
	// the positions it gave. A store call that fails (one timeout on a busy store, a
	// failover) must not silence every waiter of the instance until the next round
	// comes back; a position only moves forward while the line waits (a lottery
	// aside), so one a few seconds old is at worst a little behind. After that,
	// waiters hear nothing until the store answers again.
	staleAfter = 5 * time.Second
	// heartbeatBatch is how many waiters one Heartbeat call carries.
	heartbeatBatch = 1000
)

// resendAfter is how long an unchanged position goes unsent. A waiter must hear
// something at least every maxSilence; resends go out at the hub's ticks, up to
// resendEvery after they are owed, and resendSlack is left for a hub running late:
// the silence is 1.73 to 1.75 s on time.
const resendAfter = maxSilence - resendSlack - resendEvery

// changeBudget is about how many messages a second an instance spends on telling its
// waiters that their place moved, beyond the resend every waiter gets within
// maxSilence anyway. While the line moves (every round, in a sale), each waiter is owed
// a message per round; up to changeBudget/2 waiters on an instance hear every round,
// and above that the moves are told less often, down to the resends' own pace, so a
// moving line costs an instance about max(changeBudget, waiters/resendAfter) messages
// a second. Unbounded, 100,000 waiters would ask for 200,000 messages a second: more than
// two cores can write, so every round ran late and the 2 s promise broke for half of
// them (caddytest/load, the ws section's moving window).
const changeBudget = 10_000

// changeGap is the least time between two messages that tell a waiter of one instance
// holding waiters waiters that its place moved. A quarter round of slack keeps a
// round that comes a little early from missing its turn.
func changeGap(waiters int) time.Duration {
	return min(time.Duration(waiters)*time.Second/changeBudget, resendAfter) - pushEvery/4
}
