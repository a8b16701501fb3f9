-- release.lua: ends the instance's hold on every id it holds, and hears every id that
-- is queued. A waiter let go is watched by its bucket again (the sweep passes over
-- held waiters), so its bucket's score is lowered to now.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      now: unix ms
-- ARGV[2]      slot: the instance's number among the room's holders (hold.lua)
-- ARGV[3+k]    the k-th waiter's id, 16 bytes (at most heartbeatBatch, 1000)
--
-- Returns 0.

local now, slot = tonumber(ARGV[1]), tonumber(ARGV[2])
local base, epoch = epoch_of()
if not base then return 0 end
local r, watch = rel(now, epoch), {}
for i = 3, #ARGV do
  local t = redis.call('ZSCORE', queue, ARGV[i])
  if t then
    local off = tonumber(t) - base
    local by = redis.call('GETRANGE', holders, off * 2, off * 2 + 1)
    if #by == 2 and struct.unpack('>I2', by) == slot then
      redis.call('SETRANGE', holders, off * 2, '\0\0')
      watch[math.floor(off / BUCKET)] = true
    end
    hear(off, r)
  end
end
for b in pairs(watch) do redis.call('ZADD', buckets, 'LT', r, b) end
return 0
