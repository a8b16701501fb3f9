-- move.lua: gives visitor from's place to visitor to (queue.Store.Move). The place is
-- its members in the room's sets, re-keyed: queue (the ticket: every bitmap is by
-- ticket, so position, lane, away and no-show state stay), or active and since (the
-- session), and arrive and arrive_tickets (the arrival still owed). A waiter's holder
-- is cleared, so the device that gave it away keeps it present no longer, and its
-- bucket watches it again; the new device is heard now. from's mark, KEYS[17],
-- expires on its own at the end of the keep, and holds meta's resets so that a reset
-- ends it sooner (status.lua). from is published on the channel, so every instance
-- tells the sockets it holds for from that the place is gone.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- KEYS[17]     from's mark, waiting_room:{<room>}:moved:<hex id>, in the room's slot
-- KEYS[18]     the admissions of the hour of now (count_reason in prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      from: the id giving its place, 16 bytes
-- ARGV[2]      to: the id taking it, 16 bytes
-- ARGV[3]      now: unix ms
-- ARGV[4]      keep: how long the mark is kept, ms (queue.Limits.MovedKeep)
-- ARGV[5]      channel: where the moved ids are published (move.go)
-- ARGV[6]      reasons: 1 counts a session moved as let in by hand-off (step.lua)
--
-- Returns {state, ticket, position, returned, active, waiting} as status.lua does for
-- to, after the move; all zeros (nothing moved) when from holds no place or to is
-- known.

local from, to, now, keep, channel = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local function known(id)
  return redis.call('ZSCORE', active, id) or redis.call('ZSCORE', queue, id)
end
if from == to or known(to) then return {0, 0, 0, 0, 0, 0} end

local function rekey(set, score)
  redis.call('ZREM', set, from)
  redis.call('ZADD', set, score, to)
end
local function mark()
  redis.call('SET', KEYS[17], redis.call('HGET', meta, 'resets') or '0', 'PX', math.max(keep, 1))
  redis.call('HINCRBY', meta, 'handoffs', 1)
  redis.call('PUBLISH', channel, from)
end

local seen = redis.call('ZSCORE', active, from)
if seen then
  rekey(active, seen)
  local at = redis.call('ZSCORE', since, from)
  if at then rekey(since, at) end
  local due = redis.call('ZSCORE', arrive, from)
  if due then
    rekey(arrive, due)
    local t = redis.call('HGET', arrive_tickets, from)
    redis.call('HDEL', arrive_tickets, from)
    if t then redis.call('HSET', arrive_tickets, to, t) end
  end
  mark()
  if ARGV[6] == '1' then count_reason(KEYS[18], now, 3, 1) end
  return {2, admitted_at(to), 0, 0, redis.call('ZCARD', active), present_count()}
end

local t = redis.call('ZSCORE', queue, from)
if not t then return {0, 0, 0, 0, 0, 0} end
local ticket = tonumber(t)
rekey(queue, ticket)
local base, epoch = epoch_of()
local off = ticket - base
local by = redis.call('GETRANGE', holders, off * 2, off * 2 + 1)
if #by == 2 and struct.unpack('>I2', by) ~= 0 then
  redis.call('SETRANGE', holders, off * 2, '\0\0')
  redis.call('ZADD', buckets, 'LT', rel(now, epoch), math.floor(off / BUCKET))
end
mark()
return queued_status(ticket, now)
