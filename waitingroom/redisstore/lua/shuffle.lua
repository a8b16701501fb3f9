-- shuffle.lua: the lottery of a scheduled event. The queued waiters, present and away,
-- swap tickets (and their heard times, presence, quiet bits and holders with them) in
-- a uniformly random permutation (Fisher-Yates), so the ticket set, the held bitmap
-- and everyone who joins later stay as they are. The pass lane keeps its order. It
-- runs once per key (a field in meta), whoever calls it. O(waiters), once per event.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      key: the event's, drawn once
-- ARGV[2]      seed: math.random's, positive
--
-- Returns -1 when the key was drawn already, else the number of waiters shuffled.

if redis.call('HSETNX', meta, 'shuffled:' .. ARGV[1], 1) == 0 then return -1 end
local base = epoch_of()
if not base then return 0 end
-- The pass lane keeps its order ahead of the lottery.
local q = redis.call('ZRANGEBYSCORE', queue, base + tonumber(redis.call('HGET', meta, 'lane') or 0), '+inf', 'WITHSCORES')
local n = #q / 2
if n < 2 then return n end
local ids, tickets, hs, here, by, quiets = {}, {}, {}, {}, {}, {}
for i = 1, n do
  ids[i], tickets[i] = q[2 * i - 1], tonumber(q[2 * i])
  local off = tickets[i] - base
  hs[i] = heard_at(off)
  here[i] = redis.call('GETBIT', live, off)
  quiets[i] = redis.call('GETBIT', quiet, off)
  by[i] = redis.call('GETRANGE', holders, off * 2, off * 2 + 1)
  if #by[i] < 2 then by[i] = '\0\0' end
end
math.randomseed(tonumber(ARGV[2]))
for i = n, 2, -1 do
  local j = math.random(i)
  ids[i], ids[j] = ids[j], ids[i]
  hs[i], hs[j] = hs[j], hs[i]
  here[i], here[j] = here[j], here[i]
  quiets[i], quiets[j] = quiets[j], quiets[i]
  by[i], by[j] = by[j], by[i]
end
-- Bucket scores are lower bounds of their waiters' heard times; waiters moved between
-- buckets, so they are recomputed exactly.
redis.call('DEL', buckets, gone)
local mins, away_mins = {}, {}
for i = 1, n do
  local off = tickets[i] - base
  redis.call('ZADD', queue, tickets[i], ids[i])
  redis.call('SETRANGE', heard, off * 4, struct.pack('>I4', hs[i]))
  redis.call('SETBIT', live, off, here[i])
  redis.call('SETBIT', quiet, off, quiets[i])
  redis.call('SETRANGE', holders, off * 2, by[i])
  local b, m = math.floor(off / BUCKET), mins
  if here[i] == 0 then m = away_mins end
  if not m[b] or hs[i] < m[b] then m[b] = hs[i] end
end
for b, h in pairs(mins) do redis.call('ZADD', buckets, h, b) end
for b, h in pairs(away_mins) do redis.call('ZADD', gone, h, b) end
return n
