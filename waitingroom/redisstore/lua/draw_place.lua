-- draw_place.lua: a chunk of an event's drawn order into the line
-- (queue.Store.PlaceDraw). The place held at each ticket given moves to the next place
-- of the order's block, with everything it holds: its member of queue, its heard time
-- and holder, its live, held, quiet and missed bits, and a lowered score of its new
-- bucket. The chunk goes only where the record's done says it was asked for, so two
-- instances never place one chunk twice.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- KEYS[17]     the room's draws (draw_commit.lua)
-- KEYS[18]     the draw's record, waiting_room:{<room>}:draw:<id>
-- KEYS[19]     the draw's held bitmap at the close (draw_close.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      keep: how long a drawn draw's keys are kept, s (queue.DrawKeep)
-- ARGV[2]      done: the places placed before this chunk, as the caller read them
-- ARGV[3+k]    the ticket whose place is the order's (done+1+k)-th
--
-- Returns {state, done} of the record after the call; an error reply for a draw the
-- store does not hold.

local draws, rec, snap = KEYS[17], KEYS[18], KEYS[19]
local keep, done = tonumber(ARGV[1]), tonumber(ARGV[2])
local r = redis.call('HMGET', rec, 'state', 'done', 'first', 'entrants')
if not r[1] then return redis.error_reply('NODRAW no such draw') end
local state, at, first, entrants = tonumber(r[1]), tonumber(r[2]), tonumber(r[3]), tonumber(r[4])
local n = #ARGV - 2
if state ~= 2 or at ~= done or done + n > entrants then return {state, at} end

local base, epoch = epoch_of()
local flags = {live, held, quiet, missed}
local function place(from, to)
  local a, b = from - base, to - base
  local id = redis.call('ZRANGEBYSCORE', queue, from, from, 'LIMIT', 0, 1)[1]
  if not id then return end -- its waiter left: the place stays empty
  redis.call('ZADD', queue, to, id)
  local h = redis.call('GETRANGE', heard, a * 4, a * 4 + 3)
  if #h == 4 then redis.call('SETRANGE', heard, b * 4, h) end
  local by = redis.call('GETRANGE', holders, a * 2, a * 2 + 1)
  if #by == 2 and by ~= '\0\0' then
    redis.call('SETRANGE', holders, b * 2, by)
    redis.call('SETRANGE', holders, a * 2, '\0\0')
  end
  local bits = {}
  for i, key in ipairs(flags) do
    bits[i] = redis.call('GETBIT', key, a)
    if bits[i] == 1 then
      redis.call('SETBIT', key, b, 1)
      redis.call('SETBIT', key, a, 0)
    end
  end
  if #h == 4 and bits[2] == 1 then
    -- The buckets' scores stay lower bounds of their waiters' heard times.
    local zs = bits[1] == 1 and buckets or gone
    redis.call('ZADD', zs, 'LT', (struct.unpack('>I4', h)), math.floor(b / BUCKET))
  end
end
if base then
  for k = 1, n do
    local from, to = tonumber(ARGV[2 + k]), first + done + k
    if from >= base and to >= base then place(from, to) end
  end
end
done = done + n
redis.call('HSET', rec, 'done', done)
if done == entrants then
  state = 3
  redis.call('HSET', rec, 'state', 3)
  redis.call('HSET', draws, 'state', 3)
  for _, k in ipairs({rec, snap}) do redis.call('EXPIRE', k, keep) end
end
return {state, done}
