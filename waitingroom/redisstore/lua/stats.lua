-- stats.lua: the room's counters.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV         none after the deadline (prelude.lua)
--
-- Returns {active, waiting (present), admitted total, away, no-shows, hand-offs}.

local away = away_count()
return {redis.call('ZCARD', active), redis.call('ZCARD', queue) - away,
  tonumber(redis.call('HGET', meta, 'admitted_total') or 0), away,
  tonumber(redis.call('HGET', meta, 'no_shows') or 0),
  tonumber(redis.call('HGET', meta, 'handoffs') or 0)}
