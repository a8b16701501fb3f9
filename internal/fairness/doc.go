// Package fairness runs a room's draws across its fleet and gives the room's public
// account of them: what internal/draw's rule needs done on the store, by whichever
// instance gets there first, and what a visitor can check.
//
//   - The commitment (draws.go): when an event's pre-queue opens (or, without one,
//     at its start) or mode random comes into force, the room offers a fresh seed to
//     the store, which keeps the first offer; every instance reads that one back.
//   - The close and the draw (draws.go, order.go): at the event's start the store
//     takes the entrants at one instant; each instance works out the drawn order
//     from the seed and the entry ids alone, and the one that claims the work moves
//     the places into the line, a chunk at a time, while admissions hold. A random
//     draw's picks (picks.go) are the present waiters first in the same order.
//   - Entry ids (order.go): the room does not keep one per waiter: an entry id is
//     HMAC-SHA256, under a key committed with the seed and never shown, of the
//     waiter's ticket at the close. It is as unpredictable as a random one to all
//     but the store's readers, is not the visitor's id, and costs no store memory.
//   - Receipts (receipts.go): signed with the room's Ed25519 key (draw.Signer),
//     fixed for a draw at its commit; a waiter outside any draw gets their ticket,
//     signed (draw.FIFO).
//   - The public page (page.go): the draw's state, commitment, entrants, entries
//     list and, once drawn, seed, and the admissions by reason per minute.
//
// Nothing here reads a request or writes a response: internal/page renders the page,
// and the room decides when to ask.
package fairness
