package queue

import (
	"slices"
)

// Modes say how a room admits, as Cloudflare's waiting rooms define them.
const (
	// ModeFIFO admits first come, first served. The default.
	ModeFIFO = "fifo"
	// ModeRandom admits any live waiter next, picked uniformly.
	ModeRandom = "random"
	// ModePassthrough admits everyone (and counts them): no queue, no limits.
	ModePassthrough = "passthrough"
	// ModeReject admits while there is room and turns the rest away with a "sold out,
	// come back later" answer, queueing nobody.
	ModeReject = "reject"
	// ModeQueueAll admits nobody new: everyone arriving queues and the ETA is hidden.
	ModeQueueAll = "queue_all"
	// ModeSuspended turns the room off: requests pass straight through, no cookie is
	// set, nothing is counted.
	ModeSuspended = "suspended"
	// ModeInviteOnly lets only visitors with a valid pass queue or enter (fifo among
	// them); everyone else gets the reject answer.
	ModeInviteOnly = "invite_only"
)

// Modes lists every mode, in the order the documentation gives them.
var Modes = []string{ModeFIFO, ModeRandom, ModePassthrough, ModeReject, ModeQueueAll, ModeSuspended, ModeInviteOnly}

// KnownMode reports whether m is one of Modes.
func KnownMode(m string) bool { return slices.Contains(Modes, m) }
