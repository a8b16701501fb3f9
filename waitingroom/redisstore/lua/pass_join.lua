-- pass_join.lua: a visitor who brings a pass joins, ahead of the ordinary line, in the
-- pass lane (pass.go), and the pass counts one use.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- KEYS[17]     the pass's use counter, waiting_room:{<room>}:pass:<id>
-- KEYS[18]     the admissions of the hour of now (count_reason in prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      id: the visitor's id, 16 bytes
-- ARGV[2]      now: unix ms
-- ARGV[3]      capacity: the most visitors admitted at once
-- ARGV[4]      session TTL, ms
-- ARGV[5]      rate count: admissions allowed per rate window (0: no rate)
-- ARGV[6]      rate window, ms (0: no rate)
-- ARGV[7]      hold: 1 admits nobody, the visitor queues
-- ARGV[8]      no-queue: 1 turns the visitor away if not admitted at once
-- ARGV[9]      uses: how many times the pass may be used
-- ARGV[10]     the pass's expiry, unix ms (its counter expires with it)
-- ARGV[11]     reasons: 1 counts an admission at join as the pass's (step.lua)
--
-- Returns {state, ticket, position, returned, active, waiting, counted}: the first six
-- as join.lua's (returned carries KNOWN for an id known already: no use counted);
-- counted 0 means the pass was used up and nothing was done (then all are 0).

local pass = KEYS[17] -- after the room's keys
local id, now = ARGV[1], tonumber(ARGV[2])
local cap, sttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local rate_n, rate_per, hold, noqueue = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1', ARGV[8] == '1'
local uses, expires = tonumber(ARGV[9]), ARGV[10]

expire_idle(now - sttl)
if redis.call('ZSCORE', active, id) then return {2, admitted_at(id), 0, KNOWN, redis.call('ZCARD', active), present_count(), 1} end
local t = redis.call('ZSCORE', queue, id)
if t then
  local st = queued_status(tonumber(t), now)
  st[4], st[7] = st[4] + KNOWN, 1
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
  if ARGV[11] == '1' then count_reason(KEYS[18], now, 1, 1) end
  return {2, now, 0, 0, nactive + 1, present_count(), 1}
end
if noqueue then return {3, 0, 0, 0, nactive, present_count(), 1} end
count_use()

local off
if queued == 0 then
  base, epoch = ticket + 1, now
  lane, off = PASS_LANE, 0
  redis.call('HSET', meta, 'base', base, 'epoch', epoch, 'away', 0, 'lane', lane, 'lane_next', 1,
    'ticket', base + PASS_LANE - 1)
  redis.call('DEL', live, held, heard, buckets, gone, holders, quiet, missed)
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
