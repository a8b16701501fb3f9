package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/redis/go-redis/v9"
)

// heartbeatBatch caps the ids sent in one script call, so a hub with many waiters
// costs waiters/1000 commands and never blocks Redis for long.
const heartbeatBatch = 1000

// sweepBuckets caps the heard buckets one Step examines for silent waiters (256
// tickets each); the rest wait for the next Step.
const sweepBuckets = 64

// roomStore is one room's queue.Store on a pooled Redis client.
type roomStore struct {
	shared    *sharedClient
	keys      []string
	channel   string
	secret    string
	overrides string
	timeout   time.Duration
	joinWait  time.Duration // see joinBatcher
	joins     joinBatcher
	clock     redisClock
	// slot is this instance's number among the room's holders (see queue.Holder), 0
	// until its first Hold or fleet record is given one (under slotMu, so it is given
	// once).
	slot   atomic.Uint32
	slotMu sync.Mutex
}

var _ queue.Store = (*roomStore)(nil)

func newRoomStore(shared *sharedClient, prefix, room string, timeout, joinWait time.Duration) *roomStore {
	base := prefix + "{" + room + "}:"
	return &roomStore{
		shared: shared,
		keys: []string{
			base + "queue", base + "active", base + "meta",
			base + "live", base + "heard", base + "heard_buckets", base + "rate",
			base + "held", base + "away_buckets", base + "holders", base + "leases",
			base + "since", base + "quiet", base + "arrive", base + "arrive_tickets", base + "missed",
		},
		channel:   base + "admitted",
		secret:    base + "secret",
		overrides: base + "overrides",
		timeout:   timeout,
		joinWait:  joinWait,
	}
}

// run calls script within the store's timeout (or ctx's deadline, if earlier), with
// that deadline as the script's first argument (see deadline.go).
func (s *roomStore) run(ctx context.Context, script *luaScript, args ...any) *redis.Cmd {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	return s.runUntil(ctx, callerDeadline, script, args...)
}

// runUntil calls script for a caller that gives up at callerDeadline; ctx bounds the
// call itself. A script's error says where in lua/ it came from.
func (s *roomStore) runUntil(ctx context.Context, callerDeadline time.Time, script *luaScript, args ...any) *redis.Cmd {
	deadline, err := s.deadline(ctx, callerDeadline)
	if err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	cmd := script.Run(ctx, s.shared.client, s.keys, append([]any{deadline}, args...)...)
	err = cmd.Err()
	if isDeadlineReply(err) {
		s.refreshClock() // late because Redis stalled, or because the clocks moved
		return cmd
	}
	s.shared.noteError(err)
	if err != nil {
		cmd.SetErr(script.locate(err))
	}
	return cmd
}

func (s *roomStore) Status(ctx context.Context, id queue.VisitorID, now time.Time) (queue.Status, error) {
	return s.status(ctx, id, now, 0)
}

func (s *roomStore) Listen(ctx context.Context, id queue.VisitorID, now time.Time) (queue.Status, error) {
	return s.status(ctx, id, now, 1)
}

// status runs status.lua; socket 1 is Listen's.
func (s *roomStore) status(ctx context.Context, id queue.VisitorID, now time.Time, socket int) (queue.Status, error) {
	res, err := s.runKeys(ctx, s.withMark(id), statusScript, id[:], now.UnixMilli(), socket).Int64Slice()
	if err != nil {
		return queue.Status{}, fmt.Errorf("reading visitor status: %w", err)
	}
	return toStatus(res)
}

// statusReply is how many numbers a script answers per visitor: state, ticket,
// position, returned, active, waiting.
const statusReply = 6

// replyKnown is the bit of the returned number that join.lua and pass_join.lua set
// for an id known already (queue.Status.Known); the bits below it are returned's own.
const replyKnown = 4

// The returned number's own values (below replyKnown): back from away, a no-show
// back, and a no-show a socket alone did not bring back (status.lua).
const (
	returnedBack    = 1
	returnedMissed  = 2
	returnedNotBack = 3
)

func toStatus(res []int64) (queue.Status, error) {
	if len(res) != statusReply {
		return queue.Status{}, fmt.Errorf("unexpected status reply %v", res)
	}
	r := res[3] &^ replyKnown
	st := queue.Status{
		State:    queue.State(res[0]),
		Ticket:   uint64(res[1]),
		Position: int(res[2]),
		Returned: r == returnedBack || r == returnedMissed,
		Missed:   r == returnedMissed || r == returnedNotBack,
		Known:    res[3]&replyKnown != 0,
		Active:   int(res[4]),
		Waiting:  int(res[5]),
	}
	if st.State == queue.Admitted {
		// An admitted visitor's answer carries its admission time where a waiter's
		// carries its ticket.
		st.Ticket = 0
		if res[1] > 0 {
			st.Since = time.UnixMilli(res[1])
		}
	}
	return st, nil
}

func (s *roomStore) Touch(ctx context.Context, id queue.VisitorID, now time.Time) (bool, error) {
	n, err := s.run(ctx, touchScript, id[:], now.UnixMilli()).Int64()
	if err != nil {
		return false, fmt.Errorf("touching session: %w", err)
	}
	return n == 1, nil
}

func (s *roomStore) Heartbeat(ctx context.Context, ids []queue.VisitorID, now time.Time) error {
	for len(ids) > 0 {
		batch := ids[:min(len(ids), heartbeatBatch)]
		ids = ids[len(batch):]
		args := make([]any, 0, 1+len(batch))
		args = append(args, now.UnixMilli())
		for _, id := range batch {
			args = append(args, id[:])
		}
		if err := s.run(ctx, heartbeatScript, args...).Err(); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("hearing waiters: %w", err)
		}
	}
	return nil
}

var _ queue.Holder = (*roomStore)(nil)

func (s *roomStore) Hold(ctx context.Context, ids []queue.VisitorID, now time.Time) error {
	slot, err := s.holderSlot(ctx, now)
	if err != nil {
		return err
	}
	for first := true; first || len(ids) > 0; first = false {
		batch := ids[:min(len(ids), heartbeatBatch)]
		ids = ids[len(batch):]
		if err := s.run(ctx, holdScript, idArgs(batch, now.UnixMilli(), slot)...).Err(); err != nil {
			return fmt.Errorf("holding waiters: %w", err)
		}
	}
	return nil
}

// holderSlot is this instance's slot, given by the store on first use.
func (s *roomStore) holderSlot(ctx context.Context, now time.Time) (uint32, error) {
	if slot := s.slot.Load(); slot != 0 {
		return slot, nil
	}
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	if slot := s.slot.Load(); slot != 0 {
		return slot, nil
	}
	n, err := s.run(ctx, holdScript, now.UnixMilli(), 0).Int64()
	if err != nil {
		return 0, fmt.Errorf("holding waiters: %w", err)
	}
	s.slot.Store(uint32(n))
	return uint32(n), nil
}

func (s *roomStore) Release(ctx context.Context, ids []queue.VisitorID, now time.Time) error {
	slot := s.slot.Load()
	if slot == 0 {
		return nil // never held anyone
	}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), heartbeatBatch)]
		ids = ids[len(batch):]
		if err := s.run(ctx, releaseScript, idArgs(batch, now.UnixMilli(), slot)...).Err(); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("releasing waiters: %w", err)
		}
	}
	return nil
}

// idArgs is a script's arguments: the leading ones, then the ids.
func idArgs(ids []queue.VisitorID, lead ...any) []any {
	args := make([]any, 0, len(lead)+len(ids))
	args = append(args, lead...)
	for _, id := range ids {
		args = append(args, id[:])
	}
	return args
}

func (s *roomStore) Leave(ctx context.Context, id queue.VisitorID) (bool, error) {
	n, err := s.run(ctx, leaveScript, id[:]).Int64()
	if err != nil {
		return false, fmt.Errorf("leaving room: %w", err)
	}
	return n == 1, nil
}

func (s *roomStore) Step(ctx context.Context, now time.Time, lim queue.Limits) (queue.StepResult, error) {
	return s.step(ctx, now, lim, 0)
}

func (s *roomStore) AdmitNow(ctx context.Context, n int, now time.Time, lim queue.Limits) (queue.StepResult, error) {
	if n <= 0 {
		return queue.StepResult{}, nil
	}
	return s.step(ctx, now, lim, n)
}

// step runs the admission step script; forced > 0 admits that many regardless of
// capacity, rate and hold.
func (s *roomStore) step(ctx context.Context, now time.Time, lim queue.Limits, forced int) (queue.StepResult, error) {
	var seed int32 // 0: admit from the head
	if lim.Random && lim.Picks == nil {
		seed = seedForLua()
	}
	keys := append(s.keys[:len(s.keys):len(s.keys)], s.admissionsKey(now), s.drawKey(""), s.drawKey(":picked"))
	args := []any{now.UnixMilli(), lim.Capacity,
		lim.SessionTTL.Milliseconds(), lim.QueueTTL.Milliseconds(), s.channel, sweepBuckets, forced,
		lim.Rate, lim.RatePer.Milliseconds(), seed, flag(lim.Hold), lim.AwayTTL.Milliseconds(),
		lim.SessionMax.Milliseconds(), lim.ArriveTTL.Milliseconds(), flag(lim.Reasons)}
	if lim.Random && lim.Picks != nil && forced == 0 {
		keys[len(keys)-2], keys[len(keys)-1] = s.drawKey(lim.Picks.Draw), s.drawKey(lim.Picks.Draw+":picked")
		for _, t := range lim.Picks.Tickets {
			args = append(args, t)
		}
	}
	res, err := s.runKeys(ctx, keys, stepScript, args...).Slice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return queue.StepResult{}, fmt.Errorf("admission step: %w", err)
	}
	if len(res) < 2+int(queue.NumReasons) {
		return queue.StepResult{}, fmt.Errorf("admission step: short reply %v", res)
	}
	dropped, _ := res[0].(int64)
	noShows, _ := res[1].(int64)
	out := queue.StepResult{Abandoned: int(dropped), NoShows: int(noShows)}
	for i := range out.ByReason {
		n, _ := res[2+i].(int64)
		out.ByReason[i] = uint64(n)
	}
	for _, item := range res[2+int(queue.NumReasons):] {
		raw, _ := item.(string)
		var id queue.VisitorID
		if len(raw) != len(id) {
			return queue.StepResult{}, fmt.Errorf("admission step: malformed visitor id of %d bytes", len(raw))
		}
		copy(id[:], raw)
		out.Admitted = append(out.Admitted, id)
	}
	return out, nil
}

func (s *roomStore) Shuffle(ctx context.Context, key string) (bool, error) {
	n, err := s.run(ctx, shuffleScript, key, seedForLua()).Int64()
	if err != nil {
		return false, fmt.Errorf("shuffling the queue: %w", err)
	}
	return n >= 0, nil
}

// seedForLua is a fresh seed for a script's math.random, which Redis otherwise seeds
// the same way on every call. Positive, and within the int that math.randomseed takes.
func seedForLua() int32 { return 1 + rand.Int32N(math.MaxInt32-1) }

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *roomStore) Reset(ctx context.Context) error {
	if err := s.run(ctx, resetScript).Err(); err != nil {
		return fmt.Errorf("resetting room: %w", err)
	}
	return nil
}

func (s *roomStore) Overrides(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	doc, err := s.shared.client.Get(ctx, s.overrides).Bytes()
	s.shared.noteError(err)
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading runtime settings: %w", err)
	}
	return doc, nil
}

func (s *roomStore) SwapOverrides(ctx context.Context, old, doc []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	deadline, err := s.deadline(ctx, callerDeadline)
	if err != nil {
		return false, fmt.Errorf("saving runtime settings: %w", err)
	}
	n, err := swapOverridesScript.Run(ctx, s.shared.client, []string{s.overrides}, deadline, old, doc).Int64()
	if isDeadlineReply(err) {
		s.refreshClock()
	} else {
		s.shared.noteError(err)
		err = swapOverridesScript.locate(err)
	}
	if err != nil {
		return false, fmt.Errorf("saving runtime settings: %w", err)
	}
	return n == 1, nil
}

// Positions fetches the live-ticket bitmap from the head on (one command, ~1 bit per
// ticket of the current busy period) and counts set bits locally. Tickets in line
// order, as the hub lists them, are counted in one pass over the bitmap beside them,
// with nothing made: the hub asks twice a second on every instance, and a count per
// bitmap byte would be half a megabyte at 1,000,000 waiters. Tickets in any other order
// get that count first.
func (s *roomStore) Positions(ctx context.Context, tickets []uint64, out []int) error {
	if len(out) != len(tickets) {
		return fmt.Errorf("positions: %d tickets but room for %d answers", len(tickets), len(out))
	}
	res, err := s.run(ctx, positionsScript).Slice()
	if err != nil {
		return fmt.Errorf("reading positions: %w", err)
	}
	if len(res) != 3 {
		return fmt.Errorf("reading positions: unexpected reply of %d items", len(res))
	}
	base, _ := res[0].(int64)
	from, _ := res[1].(int64)
	bitmap, _ := res[2].(string)
	first := uint64(base) + uint64(from)*8 // ticket of the bitmap's first bit
	var before []int32                     // before[i]: set bits in bytes [0, i), for tickets out of order
	if !slices.IsSorted(tickets) {
		before = make([]int32, len(bitmap)+1)
		for i := range len(bitmap) {
			before[i+1] = before[i] + int32(bits.OnesCount8(bitmap[i]))
		}
	}
	counted, ahead := 0, 0 // in line order, ahead holds the set bits in bytes [0, counted)
	for i, t := range tickets {
		out[i] = 0
		if len(bitmap) == 0 || t < first || t-first >= uint64(len(bitmap))*8 {
			continue
		}
		off := t - first
		at := int(off / 8)
		if before != nil {
			ahead = int(before[at])
		} else {
			for ; counted < at; counted++ {
				ahead += bits.OnesCount8(bitmap[counted])
			}
		}
		b := bitmap[at]
		shift := 7 - off%8 // bit 0 of a Redis bitmap is the most significant
		if b>>shift&1 == 0 {
			continue
		}
		out[i] = ahead + bits.OnesCount8(b>>(shift+1)) + 1
	}
	return nil
}

func (s *roomStore) Stats(ctx context.Context) (queue.Stats, error) {
	res, err := s.run(ctx, statsScript).Int64Slice()
	if err != nil {
		return queue.Stats{}, fmt.Errorf("reading room counters: %w", err)
	}
	if len(res) != 6 {
		return queue.Stats{}, fmt.Errorf("reading room counters: unexpected reply %v", res)
	}
	return queue.Stats{Active: int(res[0]), Waiting: int(res[1]), AdmittedTotal: uint64(res[2]), Away: int(res[3]),
		NoShows: uint64(res[4]), Handoffs: uint64(res[5])}, nil
}

// Secret stores the candidate unless a secret is there already (SET NX GET: one
// command, so two instances racing agree on whichever got there first).
func (s *roomStore) Secret(ctx context.Context, candidate []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	prev, err := s.shared.client.SetArgs(ctx, s.secret, candidate, redis.SetArgs{Mode: "NX", Get: true}).Result()
	s.shared.noteError(err)
	switch {
	case errors.Is(err, redis.Nil):
		return candidate, nil
	case err != nil:
		return nil, fmt.Errorf("sharing room secret: %w", err)
	}
	return []byte(prev), nil
}

func (s *roomStore) Subscribe(fn func(ids []queue.VisitorID)) (cancel func()) {
	return s.shared.subscribe(s.channel, s.timeout, fn)
}
