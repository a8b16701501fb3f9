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

local base = epoch_of()
if base then
  -- The chunk's moves, by k: the place held at offset from[k] goes to offset to[k]; the
  -- order's block is contiguous, so each kind of value is written to it in one
  -- command, and read from the places it leaves one command a place (queue, heard,
  -- holders) or one command a bitmap.
  local from, to = {}, {}
  for k = 1, n do
    local f, t = tonumber(ARGV[2 + k]) - base, first + done + k - base
    if f >= 0 and t >= 0 then
      local m = #from + 1
      from[m], to[m] = f, t
    end
  end
  local function bitfield(key, op, offsets, values)
    local out = {}
    for i = 1, #offsets, 330 do
      local args = {}
      for j = i, math.min(i + 329, #offsets) do
        local a = #args
        args[a + 1], args[a + 2], args[a + 3] = op, 'u1', offsets[j]
        if values then args[a + 4] = values[j] end
      end
      local got = redis.call('BITFIELD', key, unpack(args))
      for _, v in ipairs(got) do out[#out + 1] = v end
    end
    return out
  end
  local flags = {live, held, quiet, missed}
  local bits = {}
  for i, key in ipairs(flags) do bits[i] = bitfield(key, 'GET', from) end
  local has_holders = redis.call('STRLEN', holders) > 0
  local entries, hs, bys, zeros = {}, {}, {}, {}
  local low, away_low = {}, {}
  for m = 1, #from do
    local a = from[m]
    local id = redis.call('ZRANGEBYSCORE', queue, base + a, base + a, 'LIMIT', 0, 1)[1]
    local h, by = '\0\0\0\0', '\0\0'
    if id then
      local e = #entries
      entries[e + 1], entries[e + 2] = base + to[m], id
      local got = redis.call('GETRANGE', heard, a * 4, a * 4 + 3)
      if #got == 4 then h = got end
      if has_holders then
        got = redis.call('GETRANGE', holders, a * 2, a * 2 + 1)
        if #got == 2 and got ~= '\0\0' then
          by = got
          redis.call('SETRANGE', holders, a * 2, '\0\0')
        end
      end
      if bits[2][m] == 1 then
        -- The buckets' scores stay lower bounds of their waiters' heard times.
        local b, r = math.floor(to[m] / BUCKET), (struct.unpack('>I4', h))
        local zs = bits[1][m] == 1 and low or away_low
        if not zs[b] or r < zs[b] then zs[b] = r end
      end
    end
    hs[m], bys[m], zeros[m] = h, by, 0
  end
  if #from > 0 then
    in_chunks('ZADD', queue, entries)
    -- to is contiguous but for places before a new busy period's base: none, or all.
    if to[#to] - to[1] + 1 == #to then
      redis.call('SETRANGE', heard, to[1] * 4, table.concat(hs))
      if has_holders then redis.call('SETRANGE', holders, to[1] * 2, table.concat(bys)) end
    end
    for i, key in ipairs(flags) do
      bitfield(key, 'SET', from, zeros)
      bitfield(key, 'SET', to, bits[i])
    end
    for b, r in pairs(low) do redis.call('ZADD', buckets, 'LT', r, b) end
    for b, r in pairs(away_low) do redis.call('ZADD', gone, 'LT', r, b) end
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
