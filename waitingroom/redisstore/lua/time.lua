-- time.lua: the clock of the node that holds the room's keys (deadline.go). It has no
-- prelude: it is how the deadline is measured.
--
-- KEYS[1]      one of the room's keys, not read: it routes the call to the node that
--              serves the room's hash slot
-- ARGV         none
--
-- Returns Redis's TIME: {unix seconds, microseconds}.

return redis.call('TIME')
