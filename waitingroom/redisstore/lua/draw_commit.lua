-- draw_commit.lua: commits a draw (queue.Store.CommitDraw): the first offer wins. The
-- room's current draw, while not drawn, and a draw of the same id at any time, are
-- kept as they are: a seed once committed is never replaced.
--
-- KEYS[1]      the room's draws, waiting_room:{<room>}:draws (HASH: current -> the
--              current draw's id, state -> its state)
-- KEYS[2]      the draw's record, waiting_room:{<room>}:draw:<id> (draws.go)
-- KEYS[3]      the room's meta (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      id
-- ARGV[2]      lottery: the event's key, "" for a random draw
-- ARGV[3]      seed, 32 bytes
-- ARGV[4]      entry key, 32 bytes
-- ARGV[5]      committed, unix s
-- ARGV[6]      public key
--
-- Returns the id of the room's current draw after the call, whose record the store
-- then reads.

local draws, rec, meta = KEYS[1], KEYS[2], KEYS[3]
local id, lottery = ARGV[1], ARGV[2]
local cur = redis.call('HMGET', draws, 'current', 'state')
if cur[1] and cur[2] ~= '3' then return cur[1] end
if redis.call('EXISTS', rec) == 1 then return id end
redis.call('HSET', rec, 'lottery', lottery, 'seed', ARGV[3], 'entry_key', ARGV[4], 'committed', ARGV[5],
  'public_key', ARGV[6], 'state', 1, 'close', 0, 'entrants', 0, 'first', 0, 'done', 0)
redis.call('HSET', draws, 'current', id, 'state', 1)
-- A release that only knows the lottery of shuffle.lua finds this one drawn.
if lottery ~= '' then redis.call('HSETNX', meta, 'shuffled:' .. lottery, 1) end
return id
