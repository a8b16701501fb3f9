-- draw_close.lua: closes a draw's entries (queue.Store.CloseDraw) in one step: keeps
-- the held bitmap as it is now (the entrants: the ordinary lane's places held, present
-- or away), the last ticket issued, and for an event's draw sets aside the block of
-- tickets its drawn order goes to, so every later ticket is behind it. A random draw
-- is drawn at once: its picks, and everyone still in line, are its entrants.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- KEYS[17]     the room's draws (draw_commit.lua)
-- KEYS[18]     the draw's record, waiting_room:{<room>}:draw:<id>
-- KEYS[19]     the draw's held bitmap as the close found it, draw:<id>:held
-- KEYS[20]     the draw's picks (a random draw's), draw:<id>:picked: 8 bytes a ticket
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      keep: how long a drawn draw's keys are kept, s (queue.DrawKeep)
--
-- Returns 1 when this call closed the draw, 0 when it was closed already; an error
-- reply for a draw the store does not hold.

local draws, rec, snap, picked = KEYS[17], KEYS[18], KEYS[19], KEYS[20]
local keep = tonumber(ARGV[1])
local st = redis.call('HMGET', rec, 'state', 'lottery')
if not st[1] then return redis.error_reply('NODRAW no such draw') end
if st[1] ~= '1' then return 0 end

local ticket = ticket_guard(tonumber(redis.call('HGET', meta, 'ticket') or 0))
local m = redis.call('HMGET', meta, 'base', 'lane')
local base, lane = tonumber(m[1]), tonumber(m[2] or 0)
local n = 0
if base and redis.call('ZCARD', queue) > 0 then
  redis.call('COPY', held, snap, 'REPLACE')
  if ticket - base >= lane then n = redis.call('BITCOUNT', held, lane, ticket - base, 'BIT') end
else
  base = 0
  redis.call('DEL', snap)
end
local state = 3
if st[2] ~= '' then
  if n > 0 then state = 2 end
  redis.call('HSET', meta, 'ticket', ticket + n)
else
  n = n + redis.call('STRLEN', picked) / 8
end
redis.call('HSET', rec, 'state', state, 'close', ticket, 'entrants', n, 'first', ticket, 'base', base, 'lane', lane)
redis.call('HSET', draws, 'state', state)
if state == 3 then
  for _, k in ipairs({rec, snap, picked}) do redis.call('EXPIRE', k, keep) end
end
return 1
