// Package storetest is the conformance suite every queue.Store must pass, in the
// manner of testing/fstest: a store package calls Run from its own tests with a function
// that opens a fresh, empty room.
//
// The suite drives the store with explicit times (an injected clock, never a sleep), so
// expiry is tested exactly and fast, whatever the store.
package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Open returns a new, empty store for one room. It is called once per subtest; the
// store is closed by the test's Cleanup, which Open registers.
type Open func(t *testing.T) queue.Store

// Run runs the conformance suite against the stores that open returns.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(*testing.T, Open)
	}{
		{"JoinAdmitsWhileSlotsFree", testJoinAdmitsWhileSlotsFree},
		{"JoinQueuesBehindWaiters", testJoinQueuesBehindWaiters},
		{"JoinIsIdempotent", testJoinIsIdempotent},
		{"SameIDFromDevicesIsOnePlace", testSameIDFromDevicesIsOnePlace},
		{"JoinKnownCountsNothing", testJoinKnownCountsNothing},
		{"TicketsFollowArrival", testTicketsFollowArrival},
		{"Status", testStatus},
		{"Touch", testTouch},
		{"SessionExpiryFreesSlot", testSessionExpiryFreesSlot},
		{"SessionMaxFreesSlot", testSessionMaxFreesSlot},
		{"SessionMaxOff", testSessionMaxOff},
		{"AdmittedSaysSince", testAdmittedSaysSince},
		{"WaiterLiveness", testWaiterLiveness},
		{"LivenessAcrossLongQueue", testLivenessAcrossLongQueue},
		{"DeadHeadIsSkipped", testDeadHeadIsSkipped},
		{"Leave", testLeave},
		{"StepFillsFreeSlotsInTicketOrder", testStepFillsFreeSlotsInTicketOrder},
		{"CapacityDecrease", testCapacityDecrease},
		{"PositionsMatchBruteForce", testPositionsMatchBruteForce},
		{"Stats", testStats},
		{"Secret", testSecret},
		{"Subscribe", testSubscribe},
		{"Concurrency", testConcurrency},
		{"AbandonedAreCounted", testAbandonedAreCounted},
		{"AdmitNowBeyondCapacity", testAdmitNowBeyondCapacity},
		{"Reset", testReset},
		{"Overrides", testOverrides},
		{"OverridesConcurrentPatches", testOverridesConcurrentPatches},
		{"RateLimitsJoinAndStep", testRateLimitsJoinAndStep},
		{"RateCountsForcedAdmissions", testRateCountsForcedAdmissions},
		{"RateUnderConcurrency", testRateUnderConcurrency},
		{"RandomPicksUniformlyAmongLive", testRandomPicksUniformlyAmongLive},
		{"HoldQueuesEveryone", testHoldQueuesEveryone},
		{"NoQueueTurnsAway", testNoQueueTurnsAway},
		{"ShuffleIsALottery", testShuffleIsALottery},
		{"AwayIsNotCounted", testAwayIsNotCounted},
		{"ReturnBeforeTurn", testReturnBeforeTurn},
		{"ReturnAfterTurnGoesFirst", testReturnAfterTurnGoesFirst},
		{"ReturnerTakesAFreeSlot", testReturnerTakesAFreeSlot},
		{"AwayExpires", testAwayExpires},
		{"AwayDoNotHoldUpJoins", testAwayDoNotHoldUpJoins},
		{"AwaySkippedByAdmitNowAndDraw", testAwaySkippedByAdmitNowAndDraw},
		{"NoAwayWithoutAwayTTL", testNoAwayWithoutAwayTTL},
		{"ShuffleKeepsAway", testShuffleKeepsAway},
		{"AwayMatchesModel", testAwayMatchesModel},
		{"AwayAcrossLongQueue", testAwayAcrossLongQueue},
		{"SilentSinceJoinIsNotKept", testSilentSinceJoinIsNotKept},
		{"NoShowGivesSlotBack", testNoShowGivesSlotBack},
		{"ArrivalKeepsSlot", testArrivalKeepsSlot},
		{"AdmittedAtJoinHasArrived", testAdmittedAtJoinHasArrived},
		{"AdmitNowMustArrive", testAdmitNowMustArrive},
		{"NoShowWithoutAway", testNoShowWithoutAway},
		{"NoShowPlaceExpires", testNoShowPlaceExpires},
		{"NoShowIntoEmptyLine", testNoShowIntoEmptyLine},
		{"NoShowFirstInRandomMode", testNoShowFirstInRandomMode},
		{"NoShowKeptOnce", testNoShowKeptOnce},
		{"NoShowKeptOnceAcrossAnEmptyLine", testNoShowKeptOnceAcrossAnEmptyLine},
		{"NoShowsCannotHoldTheHead", testNoShowsCannotHoldTheHead},
		{"SocketAloneIsNotComingBack", testSocketAloneIsNotComingBack},
		{"PassHoldersGoFirst", testPassHoldersGoFirst},
		{"PassAdmitsAtJoin", testPassAdmitsAtJoin},
		{"PassUsesAreCounted", testPassUsesAreCounted},
		{"PassHolderAway", testPassHolderAway},
		{"PassPositionsMatchModel", testPassPositionsMatchModel},
		{"OnceAcceptsEachKeyOnce", testOnceAcceptsEachKeyOnce},
		{"OnceUnderConcurrency", testOnceUnderConcurrency},
		{"ReportsAddUp", testReportsAddUp},
		{"MoveKeepsTheWaitersPlace", testMoveKeepsTheWaitersPlace},
		{"MoveKeepsTheSession", testMoveKeepsTheSession},
		{"MoveOfNothingIsRefused", testMoveOfNothingIsRefused},
		{"MoveKeepsAwayAndArrival", testMoveKeepsAwayAndArrival},
		{"ResetForgetsMoves", testResetForgetsMoves},
		{"DrawCommitFirstOfferWins", testDrawCommitFirstOfferWins},
		{"DrawCloseTakesTheHeldPlaces", testDrawCloseTakesTheHeldPlaces},
		{"DrawPlacesTheOrder", testDrawPlacesTheOrder},
		{"PresentListsTheLine", testPresentListsTheLine},
		{"RandomDrawTakesThePicksInOrder", testRandomDrawTakesThePicksInOrder},
		{"AdmissionsByReason", testAdmissionsByReason},
		{"FIFOReasonsMatchModel", testFIFOReasonsMatchModel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// t0 is the suite's epoch; any fixed time works, a store must not read its own clock.
var t0 = time.Date(2031, time.March, 14, 15, 9, 26, 0, time.UTC)

func limits(capacity int) queue.Limits {
	return queue.Limits{Capacity: capacity, SessionTTL: 5 * time.Minute, QueueTTL: time.Minute}
}

// room bundles a store with the calls the tests make, failing the test on any error.
type room struct {
	t *testing.T
	s queue.Store
}

func newRoom(t *testing.T, open Open) room { return room{t: t, s: open(t)} }

func (r room) join(now time.Time, lim queue.Limits) (queue.VisitorID, queue.Status) {
	r.t.Helper()
	id := queue.NewVisitorID()
	return id, r.joinID(id, now, lim)
}

func (r room) joinID(id queue.VisitorID, now time.Time, lim queue.Limits) queue.Status {
	r.t.Helper()
	st, err := r.s.Join(context.Background(), id, now, lim)
	if err != nil {
		r.t.Fatalf("Join: %v", err)
	}
	return st
}

func (r room) status(id queue.VisitorID, now time.Time) queue.Status {
	r.t.Helper()
	st, err := r.s.Status(context.Background(), id, now)
	if err != nil {
		r.t.Fatalf("Status: %v", err)
	}
	return st
}

func (r room) listen(id queue.VisitorID, now time.Time) queue.Status {
	r.t.Helper()
	st, err := r.s.Listen(context.Background(), id, now)
	if err != nil {
		r.t.Fatalf("Listen: %v", err)
	}
	return st
}

func (r room) touch(id queue.VisitorID, now time.Time) bool {
	r.t.Helper()
	ok, err := r.s.Touch(context.Background(), id, now)
	if err != nil {
		r.t.Fatalf("Touch: %v", err)
	}
	return ok
}

func (r room) heartbeat(now time.Time, ids ...queue.VisitorID) {
	r.t.Helper()
	if err := r.s.Heartbeat(context.Background(), ids, now); err != nil {
		r.t.Fatalf("Heartbeat: %v", err)
	}
}

func (r room) leave(id queue.VisitorID) bool {
	r.t.Helper()
	ok, err := r.s.Leave(context.Background(), id)
	if err != nil {
		r.t.Fatalf("Leave: %v", err)
	}
	return ok
}

func (r room) step(now time.Time, lim queue.Limits) []queue.VisitorID {
	r.t.Helper()
	return r.stepResult(now, lim).Admitted
}

func (r room) stepResult(now time.Time, lim queue.Limits) queue.StepResult {
	r.t.Helper()
	res, err := r.s.Step(context.Background(), now, lim)
	if err != nil {
		r.t.Fatalf("Step: %v", err)
	}
	return res
}

func (r room) positions(tickets ...uint64) []int {
	r.t.Helper()
	out := make([]int, len(tickets))
	if err := r.s.Positions(context.Background(), tickets, out); err != nil {
		r.t.Fatalf("Positions: %v", err)
	}
	return out
}

func (r room) stats() queue.Stats {
	r.t.Helper()
	st, err := r.s.Stats(context.Background())
	if err != nil {
		r.t.Fatalf("Stats: %v", err)
	}
	return st
}

func (r room) wantStats(want queue.Stats) {
	r.t.Helper()
	if got := r.stats(); got != want {
		r.t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func (r room) wantState(id queue.VisitorID, now time.Time, want queue.State) queue.Status {
	r.t.Helper()
	st := r.status(id, now)
	if st.State != want {
		r.t.Fatalf("visitor %s is %v, want %v", id, st.State, want)
	}
	return st
}

// fill admits capacity visitors into an empty room and returns their ids.
func (r room) fill(now time.Time, lim queue.Limits) []queue.VisitorID {
	r.t.Helper()
	ids := make([]queue.VisitorID, lim.Capacity)
	for i := range ids {
		var st queue.Status
		ids[i], st = r.join(now, lim)
		if st.State != queue.Admitted {
			r.t.Fatalf("joining an empty room (%d of %d): %v, want admitted", i+1, lim.Capacity, st.State)
		}
	}
	return ids
}

// queue queues n visitors behind a full room and returns them in ticket order.
func (r room) queue(n int, now time.Time, lim queue.Limits) ([]queue.VisitorID, []uint64) {
	r.t.Helper()
	ids := make([]queue.VisitorID, n)
	tickets := make([]uint64, n)
	for i := range ids {
		var st queue.Status
		ids[i], st = r.join(now, lim)
		if st.State != queue.Queued {
			r.t.Fatalf("joining a full room: %v, want queued", st.State)
		}
		tickets[i] = st.Ticket
	}
	return ids, tickets
}

// queueShown queues n visitors behind a full room, each heard from once at now (its
// page answered, as a real browser's does), and returns them in ticket order: waiters
// a quiet spell sends away rather than drops (see testSilentSinceJoinIsNotKept).
func (r room) queueShown(n int, now time.Time, lim queue.Limits) ([]queue.VisitorID, []uint64) {
	r.t.Helper()
	ids, tickets := r.queue(n, now, lim)
	r.heartbeat(now, ids...)
	return ids, tickets
}

func wantIDs(t *testing.T, what string, got, want []queue.VisitorID) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func wantInts(t *testing.T, what string, got, want []int) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
