package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The pass lane. A busy period (from a ticket issued into an empty queue until the
// queue is empty again) reserves its first PASS_LANE offsets for pass holders: the
// first ordinary waiter's ticket is base + PASS_LANE, and pass holders take base + 0,
// base + 1, ... in arrival order (meta's lane_next). Their tickets are below every
// ordinary one, so everything that counts the live bitmap from its start (positions,
// Step's head, AdmitNow) puts them first with no change, and every other part of the
// queue (liveness, away, holders, leases) treats them like anyone. Random mode and the
// event lottery leave the lane in its order. The reservation costs a room about 85 KiB
// of Redis memory while anyone waits (MEMORY USAGE with one waiter: 80 KiB of heard
// times, 2.6 KiB each of live and held), not per waiter.
//
// Past PASS_LANE pass holders in one busy period, a pass holder is queued at the back of
// the ordinary line (the pass still counts one use). Each pass's uses are one counter,
// waiting_room:{<room>}:pass:<id>, in the room's slot, expiring with the pass.

// passJoinScript: KEYS the room's, then the pass's counter. ARGV id, now, capacity,
// session TTL (ms), rate count, rate window (ms), hold, no-queue, uses, pass expiry (unix
// ms). Returns {state, ticket, position, returned, active, waiting, counted}: counted 0
// means the pass was used up and nothing was done.
var passJoinScript = redis.NewScript(prelude + `
local pass = KEYS[#KEYS] -- after the room's keys
local id, now = ARGV[1], tonumber(ARGV[2])
local cap, sttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local rate_n, rate_per, hold, noqueue = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1', ARGV[8] == '1'
local uses, expires = tonumber(ARGV[9]), ARGV[10]

expire_idle(now - sttl)
if redis.call('ZSCORE', active, id) then return {2, 0, 0, 0, redis.call('ZCARD', active), present_count(), 1} end
local t = redis.call('ZSCORE', queue, id)
if t then
  local st = queued_status(tonumber(t), now)
  st[7] = 1
  return st
end
if tonumber(redis.call('GET', pass) or 0) >= uses then return {0, 0, 0, 0, 0, 0, 0} end

-- Before meta is read: the guard may skip the counter and close the lane (failover.go).
ticket_guard(tonumber(redis.call('HGET', meta, 'ticket') or 0))
local m = redis.call('HMGET', meta, 'ticket', 'base', 'epoch', 'lane', 'lane_next')
local ticket, base, epoch = tonumber(m[1] or 0), tonumber(m[2]), tonumber(m[3])
local lane, lane_next = tonumber(m[4] or 0), tonumber(m[5] or 0)
local queued = redis.call('ZCARD', queue)
local nactive = redis.call('ZCARD', active)
local lane_waiting = 0
if queued > 0 and lane > 0 and lane_next > 0 then
  lane_waiting = redis.call('BITCOUNT', live, 0, lane_next - 1, 'BIT')
end

local function count_use()
  redis.call('INCR', pass)
  redis.call('PEXPIREAT', pass, expires)
end

if lane_waiting == 0 and not hold and nactive < cap and rate_budget(now, rate_n, rate_per) ~= 0 then
  count_use()
  admit(id, now)
  redis.call('HINCRBY', meta, 'admitted_total', 1)
  rate_record(now, rate_n, rate_per, 1)
  return {2, 0, 0, 0, nactive + 1, present_count(), 1}
end
if noqueue then return {3, 0, 0, 0, nactive, present_count(), 1} end
count_use()

local off
if queued == 0 then
  base, epoch = ticket + 1, now
  lane, off = PASS_LANE, 0
  redis.call('HSET', meta, 'base', base, 'epoch', epoch, 'away', 0, 'lane', lane, 'lane_next', 1,
    'ticket', base + PASS_LANE - 1)
  redis.call('DEL', live, held, heard, buckets, gone, holders, quiet)
elseif lane > 0 and lane_next < lane then
  off = lane_next
  redis.call('HSET', meta, 'lane_next', lane_next + 1)
else
  -- The lane is full (or the busy period began before there was one): the back of
  -- the line.
  ticket = ticket + 1
  off = ticket - base
  redis.call('HSET', meta, 'ticket', ticket)
end
local r = rel(now, epoch)
redis.call('SETBIT', live, off, 1)
redis.call('SETBIT', held, off, 1)
redis.call('SETRANGE', heard, off * 4, struct.pack('>I4', r))
redis.call('ZADD', buckets, 'LT', r, math.floor(off / BUCKET))
redis.call('ZADD', queue, base + off, id)
return {1, base + off, redis.call('BITCOUNT', live, 0, off, 'BIT'), 0, nactive, present_count(), 1}
`)

func (s *roomStore) JoinPass(ctx context.Context, id queue.VisitorID, pass queue.PassUse, now time.Time, lim queue.Limits) (queue.Status, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	deadline, err := s.deadline(ctx, callerDeadline)
	if err != nil {
		return queue.Status{}, false, fmt.Errorf("joining with a pass: %w", err)
	}
	keys := append(s.keys[:len(s.keys):len(s.keys)], strings.TrimSuffix(s.keys[0], "queue")+"pass:"+pass.ID)
	cmd := passJoinScript.Run(ctx, s.shared.client, keys, deadline, id[:], now.UnixMilli(),
		lim.Capacity, lim.SessionTTL.Milliseconds(), lim.Rate, lim.RatePer.Milliseconds(),
		flag(lim.Hold), flag(lim.NoQueue), pass.Uses, pass.Expires.UnixMilli())
	if err := cmd.Err(); isDeadlineReply(err) {
		s.refreshClock()
	} else {
		s.shared.noteError(err)
	}
	res, err := cmd.Int64Slice()
	if err != nil {
		return queue.Status{}, false, fmt.Errorf("joining with a pass: %w", err)
	}
	if len(res) != statusReply+1 {
		return queue.Status{}, false, fmt.Errorf("joining with a pass: unexpected reply %v", res)
	}
	if res[statusReply] == 0 {
		return queue.Status{}, false, nil
	}
	st, err := toStatus(res[:statusReply])
	return st, true, err
}
