-- report.lua: adds one instance's measurements of a control period to the room's
-- sample of that period (a hash of bucket -> count, and "failed"), and keeps the
-- sample for a few periods. A script so that a report lands whole or not at all,
-- and for the deadline check: a report Redis runs after its caller gave up would
-- be counted again by the caller's next report.
--
-- KEYS[1]      the period's sample, waiting_room:{<room>}:sample:<period>
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      keep: how long Redis keeps the sample, ms
-- ARGV[2+2k]   the k-th field: a latency bucket's number, or "failed"
-- ARGV[3+2k]   what to add to it
--
-- Returns 1.

for i = 2, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
