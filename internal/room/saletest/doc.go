// Package saletest is the hostile sale: a property-based test of a whole sale that
// drives the real engine (room.Room's Decide, its admission step, the shop's revokes
// and the admin operations) on any queue.Store, with one simulated clock for the
// fleet. Like storetest, it is a package of checks that each store's tests run:
// internal/room runs it on the memory store, waitingroom/redisstore on a real Redis.
//
// A seed picks a room's settings and a cast (scenario.go): honest visitors, some of
// whose phones sleep; bots that only open the waiting socket; keyed accounts on
// several devices, with and without cookies; hand-offs; the shop's revokes; an
// operator's PATCHes, removes and resets. Each request goes to a random instance of
// the fleet (fleet.go). After every request, every admission step and every admin
// call, the invariants (invariants.go) are checked; the first broken one ends the
// seed, printed with the last actions (trace.go).
//
// What is where: run.go the entry point, the flags and the kept seeds
// (testdata/seeds); scenario.go what a seed draws; fleet.go the clock, the instances
// and one request; actors.go the cast; operator.go the shop's revokes and the
// operator's calls; shop.go, with adapt, the shop and the flooders; invariants.go
// the checks; open.go the invariants today's engine is known to break; trace.go the
// last actions a failure prints.
package saletest
