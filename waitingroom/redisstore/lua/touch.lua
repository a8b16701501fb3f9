-- touch.lua: an admitted visitor seen again; its last seen becomes now, and one
-- admitted from the queue has arrived (step.lua's no-shows).
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      id: the visitor's id, 16 bytes
-- ARGV[2]      now: unix ms
--
-- Returns 1 when the visitor holds a slot, else 0.

if not redis.call('ZSCORE', active, ARGV[1]) then return 0 end
redis.call('ZADD', active, 'XX', 'GT', ARGV[2], ARGV[1])
if redis.call('ZREM', arrive, ARGV[1]) == 1 then redis.call('HDEL', arrive_tickets, ARGV[1]) end
return 1
