-- reset.lua: empties the queue and the active set; the ticket counter and
-- admitted_total carry on. The moved marks are keys of their own, one per id
-- (move.lua), which a script may not look for: meta's resets goes up instead, and a
-- mark made before it no longer counts (status.lua).
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV         none after the deadline (prelude.lua)
--
-- Returns 0.

redis.call('DEL', queue, active, since, live, held, heard, buckets, gone, holders, quiet, arrive, arrive_tickets, missed)
redis.call('HDEL', meta, 'base', 'epoch', 'away', 'lane', 'lane_next')
redis.call('HINCRBY', meta, 'resets', 1)
return 0
