-- leave.lua: a visitor leaves, admitted or queued.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      id: the visitor's id, 16 bytes
--
-- Returns 1 when the visitor was admitted or queued, else 0.

if redis.call('ZREM', active, ARGV[1]) == 1 then
  redis.call('ZREM', since, ARGV[1])
  if redis.call('ZREM', arrive, ARGV[1]) == 1 then redis.call('HDEL', arrive_tickets, ARGV[1]) end
  return 1
end
local t = redis.call('ZSCORE', queue, ARGV[1])
if not t then return 0 end
local base = epoch_of()
unqueue(ARGV[1], tonumber(t), base)
return 1
