-- reset.lua: empties the queue and the active set; the ticket counter and
-- admitted_total carry on.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV         none after the deadline (prelude.lua)
--
-- Returns 0.

redis.call('DEL', queue, active, since, live, held, heard, buckets, gone, holders, quiet, arrive, arrive_tickets, missed)
redis.call('HDEL', meta, 'base', 'epoch', 'away', 'lane', 'lane_next')
return 0
