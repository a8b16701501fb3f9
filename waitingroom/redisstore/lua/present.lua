-- present.lua: the ordinary lane's present waiters (queue.Store.Present), in one
-- command whatever their number.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV         none after the deadline (prelude.lua)
--
-- Returns {base, lane, first byte, live bitmap from that byte}: base is the ticket of
-- the bitmap's bit 0, and the lane's offsets (below lane) are no ordinary waiters';
-- {0, 0, 0, ''} when nobody is queued.

local m = redis.call('HMGET', meta, 'base', 'lane')
local base, lane = tonumber(m[1]), tonumber(m[2] or 0)
if not base or redis.call('ZCARD', queue) == 0 then return {0, 0, 0, ''} end
local from = math.floor(lane / 8)
return {base, lane, from, redis.call('GETRANGE', live, from, -1)}
