-- positions.lua: everything Positions needs, in one command, whatever the number of
-- tickets asked about.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV         none after the deadline (prelude.lua)
--
-- Returns {base, first byte, live bitmap from that byte}: base is the ticket of the
-- bitmap's bit 0; {0, 0, ''} when nobody is queued, {base, 0, ''} when nobody queued
-- is present.

local base = tonumber(redis.call('HGET', meta, 'base'))
if not base or redis.call('ZCARD', queue) == 0 then return {0, 0, ''} end
local first = redis.call('BITPOS', live, 1)
if first < 0 then return {base, 0, ''} end
local from = math.floor(first / 8)
return {base, from, redis.call('GETRANGE', live, from, -1)}
