-- hold.lua: renews the instance's lease, and marks every id that is queued as held by
-- it, so heard from now through that lease (an away one is back, and none is quiet
-- any more); its own heard time is left as it is.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      now: unix ms
-- ARGV[2]      slot: the instance's number among the room's holders, 1..65535 (0:
--              give this instance one)
-- ARGV[3+k]    the k-th waiter's id, 16 bytes (at most heartbeatBatch, 1000)
--
-- Returns the slot.
--
-- The hub holds each round's new sockets in one call, so a call carries every waiter
-- who joined on this instance since the last: their tickets are looked up in one
-- ZMSCORE and their holders and live bits written in one BITFIELD each (the live
-- bits' old values say who was away), a few commands a call rather than three a
-- waiter.

local now, slot = tonumber(ARGV[1]), tonumber(ARGV[2])
if slot == 0 then slot = (redis.call('HINCRBY', meta, 'instances', 1) - 1) % 65535 + 1 end
redis.call('HSET', leases, slot, now)
local base, epoch = epoch_of()
if not base or #ARGV < 3 then return slot end
local r = rel(now, epoch)
-- The queued ids' offsets, and their missed bits in one BITFIELD (none when no
-- no-show waits): a no-show queued again and away is left as it is, since only a
-- page request brings it back (status.lua); its live bit is read only then.
local queued, gets = {}, {}
for _, t in ipairs(redis.call('ZMSCORE', queue, unpack(ARGV, 3))) do
  if t then
    local off = tonumber(t) - base
    queued[#queued + 1] = off
    local n = #gets
    gets[n + 1], gets[n + 2], gets[n + 3] = 'GET', 'u1', off
  end
end
if #queued == 0 then return slot end
local mine, lives, offs, heards = {}, {}, {}, {}
local ms = redis.call('EXISTS', missed) == 1 and redis.call('BITFIELD', missed, unpack(gets)) or {}
for i, off in ipairs(queued) do
  if (ms[i] or 0) == 0 or redis.call('GETBIT', live, off) == 1 then
    local n = #mine
    mine[n + 1], mine[n + 2], mine[n + 3], mine[n + 4] = 'SET', 'u16', '#' .. off, slot
    lives[n + 1], lives[n + 2], lives[n + 3], lives[n + 4] = 'SET', 'u1', off, 1
    heards[n + 1], heards[n + 2], heards[n + 3], heards[n + 4] = 'SET', 'u1', off, 0
    offs[#offs + 1] = off
  end
end
if #offs == 0 then return slot end
redis.call('BITFIELD', holders, unpack(mine))
redis.call('BITFIELD', quiet, unpack(heards))
local back, watch = 0, {}
for i, was in ipairs(redis.call('BITFIELD', live, unpack(lives))) do
  if was == 0 then
    back = back + 1
    watch[math.floor(offs[i] / BUCKET)] = true
  end
end
if back > 0 then
  redis.call('HINCRBY', meta, 'away', -back)
  for b in pairs(watch) do redis.call('ZADD', buckets, 'LT', r, b) end
end
return slot
