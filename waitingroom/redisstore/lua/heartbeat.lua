-- heartbeat.lua: hears every id that is queued, bringing back the away ones but a
-- no-show queued again, which only a page request brings back (status.lua).
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      now: unix ms
-- ARGV[2+k]    the k-th waiter's id, 16 bytes (at most heartbeatBatch, 1000)
--
-- Returns 0.

local base, epoch = epoch_of()
if not base then return 0 end
local r = rel(tonumber(ARGV[1]), epoch)
for i = 2, #ARGV do
  local t = redis.call('ZSCORE', queue, ARGV[i])
  if t then
    local off = tonumber(t) - base
    if not not_back(off) then
      hear(off, r)
      revive(off, r)
    end
  end
end
return 0
