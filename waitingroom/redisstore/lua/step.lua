-- step.lua: one admission step. Ends lapsed sessions, sends silent waiters away and
-- drops those away too long, then admits from the head (or at random) as capacity,
-- the rate and hold allow, and publishes the admitted ids.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      now: unix ms
-- ARGV[2]      capacity: the most visitors admitted at once
-- ARGV[3]      session TTL, ms
-- ARGV[4]      queue TTL, ms: a waiter not heard from for this long is away
-- ARGV[5]      channel: where the admitted ids are published
-- ARGV[6]      buckets to sweep at most (sweepBuckets)
-- ARGV[7]      forced: admissions the admin asked for (0: none)
-- ARGV[8]      rate count: admissions allowed per rate window (0: no rate)
-- ARGV[9]      rate window, ms (0: no rate)
-- ARGV[10]     random seed (0: admit from the head)
-- ARGV[11]     hold: 1 admits nobody
-- ARGV[12]     away TTL, ms: how long an away waiter's place is kept
-- ARGV[13]     session max, ms (0: off)
-- KEYS[17]     the admissions of the hour of now, waiting_room:{<room>}:admitted:<unix
--              hour> (count_reason in prelude.lua)
-- KEYS[18]     with picks, the random draw's record, waiting_room:{<room>}:draw:<id>
-- KEYS[19]     with picks, the draw's picks, draw:<id>:picked: 8 bytes a ticket
-- ARGV[14]     arrive TTL, ms (0: off): how long a waiter admitted here has to arrive
-- ARGV[15]     reasons: 1 counts the admissions by reason (every instance reads them)
-- ARGV[16+k]   a committed random draw's picks, best first (queue.Limits.Picks)
--
-- Returns {places dropped, no-shows, the admissions by reason (six counts, in
-- queue.Reason's order), admitted ids (16 bytes each) in admission order...}, and
-- publishes the ids, concatenated, on the channel. With forced > 0 (the admin's
-- "admit n") it admits up to that many from the head regardless of capacity, rate and
-- hold; they still count against the rate window. With picks, the ordinary lane's
-- waiters it admits are the first of them present, in their order, and only while
-- the draw is open (its record's state 1); each is appended to the draw's picks.

local now, cap, sttl, qttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local channel, max_sweep, forced = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local rate_n, rate_per, seed, hold = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11] == '1'
local keep, smax = math.max(tonumber(ARGV[12]), qttl), tonumber(ARGV[13] or 0)
local attl = tonumber(ARGV[14] or 0)
local reasons, picked = ARGV[15] == '1', #ARGV >= 16
local admissions, draw_rec, draw_picks = KEYS[17], KEYS[18], KEYS[19]
-- The reasons (queue.Reason), and the admissions by each.
local IN_ORDER, PASS, RETURNED, ADMIN, RANDOM = 0, 1, 2, 4, 5
local by = {0, 0, 0, 0, 0, 0}

-- Queues no-show id (admitted at ticket t, which may be gone) again, away and heard
-- at now, where it goes first: in the pass lane of the busy period (a new one if the
-- queue is empty); if the lane is full or closed, at its old ticket when that is of
-- this busy period (the line has passed it, so it is ahead of everyone present
-- in ticket order), else at the back. Its missed bit says, when it comes back, that
-- its turn came meanwhile.
local function requeue_missed(id, t, now)
  ticket_guard(tonumber(redis.call('HGET', meta, 'ticket') or 0))
  local m = redis.call('HMGET', meta, 'ticket', 'base', 'epoch', 'lane', 'lane_next')
  local ticket, base, epoch = tonumber(m[1] or 0), tonumber(m[2]), tonumber(m[3])
  local lane, lane_next = tonumber(m[4] or 0), tonumber(m[5] or 0)
  local off
  if not base or redis.call('ZCARD', queue) == 0 then
    base, epoch, off = ticket + 1, now, 0
    redis.call('HSET', meta, 'base', base, 'epoch', epoch, 'away', 0, 'lane', PASS_LANE, 'lane_next', 1,
      'ticket', base + PASS_LANE - 1)
    redis.call('DEL', live, held, heard, buckets, gone, holders, quiet, missed)
  elseif lane > 0 and lane_next < lane then
    off = lane_next
    redis.call('HSET', meta, 'lane_next', lane_next + 1)
  elseif t >= base then
    off = t - base
  else
    ticket = ticket + 1
    off = ticket - base
    redis.call('HSET', meta, 'ticket', ticket)
  end
  local r = rel(now, epoch)
  redis.call('SETBIT', held, off, 1)
  redis.call('SETBIT', live, off, 0)
  redis.call('SETBIT', missed, off, 1)
  redis.call('SETRANGE', heard, off * 4, struct.pack('>I4', r))
  if redis.call('STRLEN', holders) > off * 2 then redis.call('SETRANGE', holders, off * 2, '\0\0') end
  redis.call('ZADD', gone, 'LT', r, math.floor(off / BUCKET))
  redis.call('HINCRBY', meta, 'away', 1)
  redis.call('ZADD', queue, base + off, id)
end

-- Gives back the slots of the visitors admitted here attl or longer before now who
-- have not arrived (touch.lua takes an arrival off arrive), queues each again (with
-- a place kept, keep > qttl) or lets it go, and returns how many. A turn is kept
-- once: one let in from the place it kept (its ticket negated in arrive_tickets, see
-- take) lets it go, so a client that never arrives holds the head for two turns, not
-- for ever. A visitor whose session ended meanwhile is no no-show. With attl 0 (off)
-- what waits is forgotten.
local function give_back_no_shows(now, attl, qttl, keep)
  if attl <= 0 then
    redis.call('DEL', arrive, arrive_tickets)
    return 0
  end
  local n = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', arrive, '-inf', now - attl, 'LIMIT', 0, 1000)) do
    redis.call('ZREM', arrive, id)
    local t = tonumber(redis.call('HGET', arrive_tickets, id) or 0)
    redis.call('HDEL', arrive_tickets, id)
    if redis.call('ZREM', active, id) == 1 then
      redis.call('ZREM', since, id)
      n = n + 1
      if keep > qttl and t >= 0 then requeue_missed(id, t, now) end
    end
  end
  if n > 0 then redis.call('HINCRBY', meta, 'no_shows', n) end
  return n
end

expire_idle(now - sttl)
if smax > 0 then end_sessions(redis.call('ZRANGEBYSCORE', since, '-inf', now - smax)) end
local no_shows = give_back_no_shows(now, attl, qttl, keep)
local base, epoch = epoch_of()
if not base or redis.call('ZCARD', queue) == 0 then return {0, no_shows, 0, 0, 0, 0, 0, 0} end
local dropped, away_delta = 0, 0
local cutoff = now - qttl - epoch -- a waiter last heard at or before cutoff is away
local lost = now - keep - epoch   -- and at or before lost, gone
local away_low = {}               -- bucket -> lowest heard of the waiters sent away now

-- The instances' leases: slot -> last renewal, ms since epoch. A lease is fresh while
-- renewed within queue_ttl, and a waiter held under a fresh lease is left out of its
-- bucket's score: the buckets do not watch it. So when a lease lapses, every bucket is
-- made due at the lease's last renewal, once, and the sweeps find the waiters it held;
-- the renewal is stored negated to say that this was done, until the instance renews.
-- Leases not renewed for as long as a place is kept are forgotten.
local lease, fresh = {}, {}
do
  local all, lapsed = redis.call('HGETALL', leases), nil
  for i = 1, #all, 2 do
    local v = tonumber(all[i + 1])
    local r = math.abs(v) - epoch
    if v > 0 and r <= cutoff then lapsed = math.min(lapsed or r, r) end
    if r <= lost then
      redis.call('HDEL', leases, all[i])
    else
      lease[tonumber(all[i])] = r
      if r > cutoff then
        fresh[tonumber(all[i])] = v > 0
      elseif v > 0 then
        redis.call('HSET', leases, all[i], -v)
      end
    end
  end
  local first = lapsed and redis.call('BITPOS', held, 1) or -1
  if first >= 0 then
    local due = {}
    for b = math.floor(first / BUCKET), math.floor((redis.call('STRLEN', held) * 8 - 1) / BUCKET) do
      local n = #due
      due[n + 1], due[n + 2] = lapsed, b
    end
    in_chunks('ZADD', buckets, due, 'LT')
  end
end

-- When the waiter at offset off, last heard at h, counts as heard: h, or the renewal
-- of the lease of the instance holding it, if later. holder is the 2 bytes of its
-- holders entry (shorter: none).
local function heard_with(h, holder)
  if #holder < 2 then return h end
  local r = lease[struct.unpack('>I2', holder)]
  if r and r > h then return r end
  return h
end

local function drop(t)
  local ids = redis.call('ZRANGEBYSCORE', queue, t, t, 'LIMIT', 0, 1)
  if ids[1] then redis.call('ZREM', queue, ids[1]) end
  redis.call('SETBIT', held, t - base, 0)
  dropped = dropped + 1
end

-- A present waiter not heard from in time: away, or gone if kept no longer or never
-- heard from since joining.
local function silence(t, h)
  local off = t - base
  redis.call('SETBIT', live, off, 0)
  if h <= lost or redis.call('GETBIT', quiet, off) == 1 then
    drop(t)
    return
  end
  away_delta = away_delta + 1
  local b = math.floor(off / BUCKET)
  if not away_low[b] or h < away_low[b] then away_low[b] = h end
end

-- Sweeps bucket b of the bitmap bm (live: the present; held: the held, of which the
-- away ones, not in live, are looked at) for waiters heard at or before limit, calls
-- act(ticket, heard) on each, and gives the bucket in zs its exact new score. A present
-- waiter held under a fresh lease is passed over and left out of the score (the
-- bucket leaves zs when it holds no other); one held under a lapsed lease counts as
-- heard at the lease's last renewal, which is written as its heard time, since an away
-- waiter is dropped by that.
local function sweep(b, zs, away, limit, act)
  local first = b * BUCKET
  local from, to = first / 8, (first + BUCKET) / 8 - 1
  local bits = redis.call('GETRANGE', away and held or live, from, to)
  local present = away and redis.call('GETRANGE', live, from, to) or nil
  local hs = redis.call('GETRANGE', heard, first * 4, (first + BUCKET) * 4 - 1)
  local hb = not away and redis.call('GETRANGE', holders, first * 2, (first + BUCKET) * 2 - 1) or ''
  local oldest
  for byte_i = 1, #bits do
    local byte = string.byte(bits, byte_i)
    if present and byte_i <= #present then
      byte = bit.band(byte, bit.bnot(string.byte(present, byte_i)))
    end
    if byte ~= 0 then
      for j = 0, 7 do
        if bit.band(byte, bit.rshift(128, j)) ~= 0 then
          local i = (byte_i - 1) * 8 + j
          local s1, s2 = string.byte(hb, i * 2 + 1, i * 2 + 2)
          local slot = s2 and s1 * 256 + s2
          if not (slot and fresh[slot]) then
            local h1, h2, h3, h4 = string.byte(hs, i * 4 + 1, i * 4 + 4)
            local h = h4 and ((h1 * 256 + h2) * 256 + h3) * 256 + h4 or 0
            local r = slot and lease[slot]
            if r and r > h and h4 then
              h = r
              redis.call('SETRANGE', heard, (first + i) * 4, struct.pack('>I4', r))
            end
            if h <= limit then
              act(base + first + i, h)
            elseif not oldest or h < oldest then
              oldest = h
            end
          end
        end
      end
    end
  end
  if oldest then
    redis.call('ZADD', zs, oldest, b)
  else
    redis.call('ZREM', zs, b)
  end
end

if cutoff >= 0 then
  local due = redis.call('ZRANGEBYSCORE', buckets, '-inf', cutoff, 'LIMIT', 0, max_sweep)
  for _, b in ipairs(due) do sweep(tonumber(b), buckets, false, cutoff, silence) end
end
for b, h in pairs(away_low) do redis.call('ZADD', gone, 'LT', h, b) end
if lost >= 0 then
  local due = redis.call('ZRANGEBYSCORE', gone, '-inf', lost, 'LIMIT', 0, max_sweep)
  for _, b in ipairs(due) do
    sweep(tonumber(b), gone, true, lost, function(t)
      drop(t)
      away_delta = away_delta - 1
    end)
  end
end

-- The sweep may have stopped at max_sweep buckets, so a waiter picked is checked
-- again: a silent waiter is sent away or dropped, never admitted.
local admitted = {}
local budget = rate_budget(now, rate_n, rate_per)
local free = cap - redis.call('ZCARD', active)
if forced > 0 then
  free, seed = forced, 0
elseif hold then
  free = 0
elseif budget >= 0 and budget < free then
  free = budget
end

-- What the admissions write once the picks are made, each kind in one command: the
-- held bits to clear, the admitted ids' (now, id) pairs for active and since (and
-- arrive), and their (id, ticket) pairs for arrive_tickets, the ticket negated for a
-- no-show let in from the place it kept (its missed bit, cleared here): its second
-- turn, which give_back_no_shows does not keep. A pick clears its live bit at once,
-- since the next pick counts or scans live.
local unheld, entered, tickets = {}, {}, {}
-- Whether any no-show waits queued again, so that a line without one pays a command a
-- step for the look, not one an admission.
local any_missed = attl > 0 and redis.call('EXISTS', missed) == 1

-- The highest ordinary ticket admitted in order: one admitted from below it was passed
-- by the line while away, and is counted as returned.
local high = tonumber(redis.call('HGET', meta, 'admitted_high') or 0)
local high_was = high
local lane = tonumber(redis.call('HGET', meta, 'lane') or 0)
local picks = {} -- the tickets admitted from the picks, 8 bytes each

-- Why ticket t, just taken by a pick of kind ('line', 'random' or 'forced'), is let
-- in; was_missed says it was a no-show queued again.
local function reason_of(t, kind, was_missed)
  if kind == 'forced' then return ADMIN end
  if t - base < lane then
    if was_missed then return RETURNED end
    return PASS
  end
  if kind == 'random' then return RANDOM end
  if was_missed or t < high then return RETURNED end
  high = t
  return IN_ORDER
end

local function take(t, kind)
  local h = heard_at(t - base)
  if h <= cutoff then h = heard_with(h, redis.call('GETRANGE', holders, (t - base) * 2, (t - base) * 2 + 1)) end
  if h <= cutoff then
    silence(t, h)
    for b, low in pairs(away_low) do redis.call('ZADD', gone, 'LT', low, b) end
    away_low = {}
    return false
  end
  local id = redis.call('ZRANGEBYSCORE', queue, t, t, 'LIMIT', 0, 1)[1]
  redis.call('SETBIT', live, t - base, 0)
  local n = #unheld
  unheld[n + 1], unheld[n + 2], unheld[n + 3], unheld[n + 4] = 'SET', 'u1', t - base, 0
  if not id then return false end -- a bit without its waiter: cleared, not admitted
  admitted[#admitted + 1] = id
  n = #entered
  entered[n + 1], entered[n + 2] = now, id
  tickets[n + 1], tickets[n + 2] = id, t
  local was_missed = false
  if any_missed and redis.call('GETBIT', missed, t - base) == 1 then
    redis.call('SETBIT', missed, t - base, 0)
    tickets[n + 2] = -t
    was_missed = true
  end
  local why = reason_of(t, kind, was_missed)
  by[why + 1] = by[why + 1] + 1
  free = free - 1
  return true
end

-- The offset of the (k+1)-th present waiter: the bytes before it are found by halving
-- with BITCOUNT (Redis counts in C), then its bit within its byte.
local function kth_present(k)
  local lo, hi = 0, redis.call('STRLEN', live) - 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if redis.call('BITCOUNT', live, 0, mid) > k then hi = mid else lo = mid + 1 end
  end
  local before = 0
  if lo > 0 then before = redis.call('BITCOUNT', live, 0, lo - 1) end
  local byte = string.byte(redis.call('GETRANGE', live, lo, lo))
  for j = 0, 7 do
    if bit.band(byte, bit.rshift(128, j)) ~= 0 then
      if before == k then return lo * 8 + j end
      before = before + 1
    end
  end
end

local present = redis.call('ZCARD', queue) - away_count() - away_delta
if (seed > 0 or picked) and lane > 0 then
  -- The pass lane goes first in random mode too, in its order.
  while free > 0 and present > 0 do
    local off = redis.call('BITPOS', live, 1, 0, lane - 1, 'BIT')
    if off < 0 then break end
    take(base + off, 'random')
    present = present - 1
  end
end
if picked then
  -- A committed random draw: its picks, in their order, while it is open.
  if redis.call('HGET', draw_rec, 'state') == '1' then
    for i = 16, #ARGV do
      if free <= 0 then break end
      local t = tonumber(ARGV[i])
      local off = t - base
      if off >= lane and redis.call('GETBIT', live, off) == 1 and take(t, 'random') then
        picks[#picks + 1] = struct.pack('>I4I4', math.floor(t / 4294967296), t % 4294967296)
      end
    end
    if #picks > 0 then redis.call('APPEND', draw_picks, table.concat(picks)) end
  end
elseif seed > 0 then
  -- Random mode: each admission is a uniform pick among those present; a silent one
  -- picked is sent away and the pick repeated, so the admitted one is uniform among
  -- the live waiters.
  math.randomseed(seed)
  while free > 0 and present > 0 do
    take(base + kth_present(math.random(present) - 1), 'random')
    present = present - 1
  end
else
  local kind = 'line'
  if forced > 0 then kind = 'forced' end
  local from = 0
  while free > 0 do
    local off = redis.call('BITPOS', live, 1, from, -1, 'BIT')
    if off < 0 then break end
    take(base + off, kind)
    from = off + 1
  end
end
if reasons then
  for i = 1, 6 do count_reason(admissions, now, i - 1, by[i]) end
  if high ~= high_was then redis.call('HSET', meta, 'admitted_high', high) end
end
if away_delta ~= 0 then redis.call('HINCRBY', meta, 'away', away_delta) end
if #unheld > 0 then in_chunks('BITFIELD', held, unheld) end
if #admitted > 0 then
  in_chunks('ZREM', queue, admitted)
  in_chunks('ZADD', active, entered)
  in_chunks('ZADD', since, entered)
  if attl > 0 then
    in_chunks('ZADD', arrive, entered)
    in_chunks('HSET', arrive_tickets, tickets)
  end
  redis.call('HINCRBY', meta, 'admitted_total', #admitted)
  rate_record(now, rate_n, rate_per, #admitted)
  redis.call('PUBLISH', channel, table.concat(admitted))
end
if redis.call('ZCARD', queue) == 0 then
  redis.call('DEL', live, held, heard, buckets, gone, holders, quiet, missed)
  redis.call('HSET', meta, 'away', 0)
end
for i = 6, 1, -1 do table.insert(admitted, 1, by[i]) end
table.insert(admitted, 1, no_shows)
table.insert(admitted, 1, dropped)
return admitted
