-- once.lua: the once-only check. The first offer sets the key to expire at until (SET
-- NX PXAT: Redis forgets it then, by its own clock); every later offer, and any offer
-- at or after until, answers 0. A script rather than the bare SET for the deadline
-- check, the only part of prelude.lua it is given: a call Redis runs after its caller
-- gave up would mark a proof used that the visitor was told had failed.
--
-- KEYS[1]      the once key, waiting_room:{<room>}:once:<key>, in the room's hash
--              slot, so a Cluster routes it with the room
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      until: unix ms by Redis's clock
--
-- Returns 1 for the first offer before until, else 0.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = tonumber(ARGV[1])
if at <= now then return 0 end
if redis.call('SET', KEYS[1], '1', 'NX', 'PXAT', at) then return 1 end
return 0
