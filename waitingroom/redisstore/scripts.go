package redisstore

import "github.com/redis/go-redis/v9"

// A room lives in thirteen keys that share one hash tag, so every script touches a single
// Cluster slot:
//
//	queue          ZSET  visitor id -> ticket, present or away (the only per-waiter entry)
//	active         ZSET  visitor id -> last seen, unix ms
//	meta           HASH  ticket (counter), base, epoch, admitted_total, away (count)
//	live           STRING bitmap, bit (ticket-base) set while that ticket's waiter is
//	                     present: queued and heard from within queue_ttl
//	held           STRING bitmap, bit (ticket-base) set while the ticket is queued at
//	                     all, present or away
//	heard          STRING 4 bytes per ticket: last heard, ms since epoch (big endian)
//	heard_buckets  ZSET  bucket (256 tickets) -> a lower bound of its present waiters' heard
//	away_buckets   ZSET  bucket -> a lower bound of its away waiters' heard
//	rate           ZSET  admission number -> admitted at, ms: the admissions inside the
//	                     rate window (at most the rate's count; empty without a rate)
//	holders        STRING 2 bytes per ticket: the instance (its slot, 1..65535) holding
//	                     that waiter's WebSocket, 0 for none
//	leases         HASH  instance slot -> its lease's last renewal, unix ms
//	since          ZSET  visitor id -> admitted at, unix ms: the same members as
//	                     active, so session_max ends sessions by admission (130 bytes
//	                     per admitted visitor, 31 while under 128; nothing per waiter)
//	quiet          STRING bitmap, bit (ticket-base) set from a join until the waiter
//	                     is first heard from (a status, a heartbeat, a hold)
//
// base and epoch restart whenever a ticket is issued into an empty queue (no waiter
// present or away), so the bitmaps and heard only span the tickets of the current busy
// period.
//
// Only a waiter heard from since joining goes away: one whose quiet bit is still set at
// queue_ttl (a cookie-less flood's places, a bot that would replay its cookies later)
// is dropped then, so such places are never held for away_ttl and put back ahead of
// the real waiters. A room without the key (a store from before it) keeps everyone away.
//
// An away waiter keeps its ticket: its live bit is clear, so it is in no position, in
// no count of waiting, and never at the head; hearing from it sets the bit again. It
// comes back ahead of every later ticket, which is the "let in first" of a waiter
// whose turn came while away: everyone present ahead of it has been admitted.
//
// A waiter held by an instance (see queue.Holder) counts as heard from at its holder's
// last renewal, and while that lease is fresh (renewed within queue_ttl) its bucket
// does not watch it: the sweep passes over it and leaves it out of the bucket's score,
// and a bucket whose present waiters are all held leaves heard_buckets. Letting a
// waiter go puts its bucket back with ZADD LT, and a lease that lapses makes every
// bucket due at its last renewal, once. So a held waiter costs Redis one look when its
// bucket is first swept and nothing while it waits (renewing each one's heard time
// every queue_ttl made an idle million cost a sweep of the whole line per queue_ttl),
// and an instance's death costs one such sweep.
//
// Why not a second ZSET of waiters by last-heard: a ZSET entry costs ~120 bytes, two
// would break the 200-byte budget per waiter. heard costs 4 bytes per ticket, and the
// buckets let Step find silent waiters without scanning the queue: a bucket's score
// never exceeds the oldest heard time of its waiters of that kind that no fresh lease
// holds (hearing only raises heard, joins, returns, departures and releases lower the
// score with ZADD LT, a sweep sets it exactly, a lapse lowers every bucket to the
// lease's renewal), so every bucket that may hold a silent waiter scores at or below
// the cutoff.
//
// The prelude starts with deadlineCheck (deadline.go): every script's ARGV[1] is its
// caller's deadline, taken off before the script reads its own arguments.
// It ends with ticketGuard (failover.go), which a join calls before issuing tickets.
const prelude = deadlineCheck + `
local queue, active, meta, live, heard, buckets = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local rate, held, gone = KEYS[7], KEYS[8], KEYS[9]
local holders, leases, since, quiet = KEYS[10], KEYS[11], KEYS[12], KEYS[13]
local BUCKET = 256
-- A busy period's first PASS_LANE offsets are the pass lane (pass.go): its tickets are
-- below every ordinary one, so every bitmap count puts pass holders first.
local PASS_LANE = 16384

-- Ends the sessions in ids (an array, from a range of active or since) in both sets.
-- unpack takes a few thousand values at most, so the ids go in chunks.
local function end_sessions(ids)
  for i = 1, #ids, 1000 do
    local chunk = {unpack(ids, i, math.min(i + 999, #ids))}
    redis.call('ZREM', active, unpack(chunk))
    redis.call('ZREM', since, unpack(chunk))
  end
  return #ids
end

-- Ends the sessions not seen since cutoff (session_ttl), and returns how many.
local function expire_idle(cutoff)
  return end_sessions(redis.call('ZRANGEBYSCORE', active, '-inf', cutoff))
end

-- Admits id at now: a slot in active, and its admission time for session_max.
local function admit(id, now)
  redis.call('ZADD', active, now, id)
  redis.call('ZADD', since, now, id)
end

-- How many more admissions the rate allows at now (-1: no rate limit). It forgets the
-- admissions that left the window: a sliding window, exact at any instant.
local function rate_budget(now, n, per)
  if n <= 0 or per <= 0 then return -1 end
  redis.call('ZREMRANGEBYSCORE', rate, '-inf', now - per)
  return math.max(n - redis.call('ZCARD', rate), 0)
end

-- Calls redis.call(cmd, key, [flag,] ...) with args in chunks small enough for unpack;
-- a chunk's size is a multiple of 4, so pairs and BITFIELD's operations stay whole.
local function in_chunks(cmd, key, args, flag)
  for i = 1, #args, 1000 do
    local chunk = {unpack(args, i, math.min(i + 999, #args))}
    if flag then
      redis.call(cmd, key, flag, unpack(chunk))
    else
      redis.call(cmd, key, unpack(chunk))
    end
  end
end

-- Records the last k admissions (admitted_total already counts them) in the window.
local function rate_record(now, n, per, k)
  if n <= 0 or per <= 0 or k <= 0 then return end
  local total, entries = tonumber(redis.call('HGET', meta, 'admitted_total')), {}
  for i = 0, k - 1 do entries[2 * i + 1], entries[2 * i + 2] = now, total - i end
  in_chunks('ZADD', rate, entries)
end

local function epoch_of()
  local v = redis.call('HMGET', meta, 'base', 'epoch')
  return tonumber(v[1]), tonumber(v[2])
end

local function rel(now, epoch)
  local r = now - epoch
  if r < 0 then return 0 end
  if r > 4294967295 then return 4294967295 end
  return r
end

local function heard_at(off)
  local s = redis.call('GETRANGE', heard, off * 4, off * 4 + 3)
  if #s < 4 then return 0 end
  return (struct.unpack('>I4', s))
end

local function hear(off, r)
  redis.call('SETBIT', quiet, off, 0)
  if heard_at(off) < r then
    redis.call('SETRANGE', heard, off * 4, struct.pack('>I4', r))
  end
end

local function away_count()
  return tonumber(redis.call('HGET', meta, 'away') or 0)
end

-- Present waiters: every queued one but the away.
local function present_count()
  return redis.call('ZCARD', queue) - away_count()
end

-- Makes the waiter at offset off (heard at r) present; true when it was away.
local function revive(off, r)
  if redis.call('SETBIT', live, off, 1) == 1 then return false end
  redis.call('HINCRBY', meta, 'away', -1)
  redis.call('ZADD', buckets, 'LT', r, math.floor(off / BUCKET))
  return true
end

local function unqueue(id, ticket, base)
  redis.call('ZREM', queue, id)
  redis.call('SETBIT', held, ticket - base, 0)
  if redis.call('SETBIT', live, ticket - base, 0) == 0 then
    redis.call('HINCRBY', meta, 'away', -1)
  end
end

-- {state, ticket, position, returned, active, waiting} of a queued waiter, heard now.
local function queued_status(ticket, now)
  local base, epoch = epoch_of()
  local off, r = ticket - base, rel(now, epoch)
  hear(off, r)
  local returned = 0
  if revive(off, r) then returned = 1 end
  local position = redis.call('BITCOUNT', live, 0, off, 'BIT')
  return {1, ticket, position, returned, redis.call('ZCARD', active), present_count()}
end
` + ticketGuard

// joinScript takes a batch of new visitors in one round trip. ARGV: capacity, session
// TTL (ms), rate count, rate window (ms), hold, no-queue, then (id, now) pairs. Returns
// {state, ticket, position, returned, active, waiting} per visitor, in order: each is
// decided exactly as if it had come alone, one after the other, inside one atomic
// script.
//
// A command called from Lua costs Redis about as much as the little work most of these
// do, and Redis is the one thing a fleet shares, so a batch reads what it needs once
// and writes its queued visitors together at the end: their tickets run on from one
// another, so their live bits, heard times and queue entries are a few commands for the
// whole batch. A queued visitor then costs two lookups (is the id known already?) where
// it cost eleven commands. Nothing else runs between the reads and the writes (a script
// is atomic), and no decision in the batch reads what is still to be written: a visitor
// admitted at join needs an empty queue, and the pending waiters are counted in waiting.
var joinScript = redis.NewScript(prelude + `
local cap, sttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local rate_n, rate_per, hold, noqueue = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == '1', ARGV[6] == '1'

-- The room's counters, read once: the last ticket issued, the queue's base and epoch,
-- and how many of the queued are away.
local m = redis.call('HMGET', meta, 'ticket', 'base', 'epoch', 'away')
local ticket, base, epoch = tonumber(m[1] or 0), tonumber(m[2]), tonumber(m[3])
ticket = ticket_guard(ticket) -- past the tickets a failover lost (failover.go)
local queued = redis.call('ZCARD', queue)   -- present and away, the pending included
local waiting = queued - tonumber(m[4] or 0) -- present, the pending included
local swept, nactive = nil, nil             -- active swept up to swept - sttl; its size, once read
local latest = nil                         -- the latest arrival of a visitor not known before
local seen = {}                            -- id -> its answer, should a batch repeat one

-- What flush writes for the batch's waiters, gathered as they join: live bits to set
-- (BITFIELD operations), heard times from offset first on, queue entries, and each
-- bucket's lowest heard time.
local first, bits, times, entries, lowest = nil, {}, {}, {}, {}

local function sweep_active(now)
  if swept and now <= swept then return end
  local gone = expire_idle(now - sttl)
  if nactive then nactive = nactive - gone end
  swept = now
end

local function active_count()
  nactive = nactive or redis.call('ZCARD', active)
  return nactive
end

local function join(id, now)
  -- The counts an answer shows are those of one-by-one calls: the sessions lapsed by
  -- the latest arrival before this one are gone.
  if latest then sweep_active(latest) end
  local again = seen[id]
  if again then return {again[1], again[2], again[3], 0, active_count(), waiting} end
  if redis.call('ZSCORE', active, id) then return {2, 0, 0, 0, active_count(), waiting} end
  local t = redis.call('ZSCORE', queue, id)
  if t then
    -- Known and queued: its answer reads the room as it stands, the batch's pending
    -- waiters included.
    local st = queued_status(tonumber(t), now)
    if st[4] == 1 then waiting = waiting + 1 end
    st[5], st[6] = active_count(), waiting
    return st
  end

  -- Every new arrival expires the lapsed sessions; only an admission needs that done
  -- before it decides, the rest is done once, for the latest, at the end.
  if not latest or now > latest then latest = now end
  if waiting == 0 and not hold then
    sweep_active(now)
    if active_count() < cap and rate_budget(now, rate_n, rate_per) ~= 0 then
      admit(id, now)
      nactive = nactive + 1
      redis.call('HINCRBY', meta, 'admitted_total', 1)
      rate_record(now, rate_n, rate_per, 1)
      return {2, 0, 0, 0, nactive, 0}
    end
  end
  if noqueue then return {3, 0, 0, 0, active_count(), waiting} end

  ticket = ticket + 1
  if queued == 0 then
    base, epoch = ticket, now
    ticket = base + PASS_LANE
    redis.call('HSET', meta, 'base', base, 'epoch', epoch, 'away', 0, 'lane', PASS_LANE, 'lane_next', 0)
    redis.call('DEL', live, held, heard, buckets, gone, holders, quiet)
  end
  local off, r = ticket - base, rel(now, epoch)
  first = first or off
  local n = #bits
  bits[n + 1], bits[n + 2], bits[n + 3], bits[n + 4] = 'SET', 'u1', off, 1
  times[#times + 1] = struct.pack('>I4', r)
  n = #entries
  entries[n + 1], entries[n + 2] = ticket, id
  local b = math.floor(off / BUCKET)
  if not lowest[b] or r < lowest[b] then lowest[b] = r end
  waiting, queued = waiting + 1, queued + 1
  return {1, ticket, waiting, 0, active_count(), waiting}
end

-- Writes the batch's waiters: their live and quiet bits, heard times and queue entries, each
-- kind in one command (their tickets, so their offsets, run on from one another), and
-- each bucket's score lowered to its lowest heard time.
local function flush()
  if latest then sweep_active(latest) end
  if not first then return end
  redis.call('HSET', meta, 'ticket', ticket)
  redis.call('BITFIELD', live, unpack(bits))
  redis.call('BITFIELD', held, unpack(bits))
  redis.call('BITFIELD', quiet, unpack(bits))
  redis.call('SETRANGE', heard, first * 4, table.concat(times))
  for b, r in pairs(lowest) do redis.call('ZADD', buckets, 'LT', r, b) end
  redis.call('ZADD', queue, unpack(entries))
end

local out = {}
for i = 7, #ARGV, 2 do
  local id = ARGV[i]
  local r = join(id, tonumber(ARGV[i + 1]))
  seen[id] = r
  local n = #out
  for k = 1, 6 do out[n + k] = r[k] end
end
flush()
return out
`)

// statusScript: ARGV id, now. Returns {state, ticket, position, returned, active,
// waiting}; hears a waiter, and so brings an away one back.
var statusScript = redis.NewScript(prelude + `
local id, now = ARGV[1], tonumber(ARGV[2])
if redis.call('ZSCORE', active, id) then return {2, 0, 0, 0, redis.call('ZCARD', active), present_count()} end
local t = redis.call('ZSCORE', queue, id)
if not t then return {0, 0, 0, 0, 0, 0} end
return queued_status(tonumber(t), now)
`)

// touchScript: ARGV id, now. Returns 1 when the visitor holds a slot.
var touchScript = redis.NewScript(prelude + `
if not redis.call('ZSCORE', active, ARGV[1]) then return 0 end
redis.call('ZADD', active, 'XX', 'GT', ARGV[2], ARGV[1])
return 1
`)

// heartbeatScript: ARGV now, id... Hears every id that is queued, bringing back the
// away ones.
var heartbeatScript = redis.NewScript(prelude + `
local base, epoch = epoch_of()
if not base then return 0 end
local r = rel(tonumber(ARGV[1]), epoch)
for i = 2, #ARGV do
  local t = redis.call('ZSCORE', queue, ARGV[i])
  if t then
    local off = tonumber(t) - base
    hear(off, r)
    revive(off, r)
  end
end
return 0
`)

// holdScript: ARGV now, slot (0: give this instance one), id... (at most
// heartbeatBatch). Renews the instance's lease, and marks every id that is queued as
// held by it, so heard from now through that lease (an away one is back, and none is
// quiet any more); its own
// heard time is left as it is. Returns the slot.
//
// The hub holds each round's new sockets in one call, so a call carries every waiter
// who joined on this instance since the last: their tickets are looked up in one
// ZMSCORE and their holders and live bits written in one BITFIELD each (the live
// bits' old values say who was away), a few commands a call where it was three a
// waiter.
var holdScript = redis.NewScript(prelude + `
local now, slot = tonumber(ARGV[1]), tonumber(ARGV[2])
if slot == 0 then slot = (redis.call('HINCRBY', meta, 'instances', 1) - 1) % 65535 + 1 end
redis.call('HSET', leases, slot, now)
local base, epoch = epoch_of()
if not base or #ARGV < 3 then return slot end
local r = rel(now, epoch)
local mine, lives, offs, heards = {}, {}, {}, {}
for _, t in ipairs(redis.call('ZMSCORE', queue, unpack(ARGV, 3))) do
  if t then
    local off = tonumber(t) - base
    local n = #mine
    mine[n + 1], mine[n + 2], mine[n + 3], mine[n + 4] = 'SET', 'u16', '#' .. off, slot
    lives[n + 1], lives[n + 2], lives[n + 3], lives[n + 4] = 'SET', 'u1', off, 1
    heards[n + 1], heards[n + 2], heards[n + 3], heards[n + 4] = 'SET', 'u1', off, 0
    offs[#offs + 1] = off
  end
end
if #offs == 0 then return slot end
redis.call('BITFIELD', holders, unpack(mine))
redis.call('BITFIELD', quiet, unpack(heards))
local back, watch = 0, {}
for i, was in ipairs(redis.call('BITFIELD', live, unpack(lives))) do
  if was == 0 then
    back = back + 1
    watch[math.floor(offs[i] / BUCKET)] = true
  end
end
if back > 0 then
  redis.call('HINCRBY', meta, 'away', -back)
  for b in pairs(watch) do redis.call('ZADD', buckets, 'LT', r, b) end
end
return slot
`)

// releaseScript: ARGV now, slot, id... Ends the instance's hold on every id it holds,
// and hears every id that is queued. A waiter let go is watched by its bucket again
// (the sweep passes over held waiters), so its bucket's score is lowered to now.
var releaseScript = redis.NewScript(prelude + `
local now, slot = tonumber(ARGV[1]), tonumber(ARGV[2])
local base, epoch = epoch_of()
if not base then return 0 end
local r, watch = rel(now, epoch), {}
for i = 3, #ARGV do
  local t = redis.call('ZSCORE', queue, ARGV[i])
  if t then
    local off = tonumber(t) - base
    local by = redis.call('GETRANGE', holders, off * 2, off * 2 + 1)
    if #by == 2 and struct.unpack('>I2', by) == slot then
      redis.call('SETRANGE', holders, off * 2, '\0\0')
      watch[math.floor(off / BUCKET)] = true
    end
    hear(off, r)
  end
end
for b in pairs(watch) do redis.call('ZADD', buckets, 'LT', r, b) end
return 0
`)

// leaveScript: ARGV id. Returns 1 when the visitor was admitted or queued.
var leaveScript = redis.NewScript(prelude + `
if redis.call('ZREM', active, ARGV[1]) == 1 then
  redis.call('ZREM', since, ARGV[1])
  return 1
end
local t = redis.call('ZSCORE', queue, ARGV[1])
if not t then return 0 end
local base = epoch_of()
unqueue(ARGV[1], tonumber(t), base)
return 1
`)

// stepScript: ARGV now, capacity, session TTL, queue TTL (ms), channel, buckets to
// sweep at most, forced admissions, rate count, rate window (ms), random seed (0: from
// the head), hold (1: admit nobody), away TTL (ms), session max (ms, 0: off). Returns {places dropped, admitted
// ids in admission order...} and publishes the ids. With forced > 0 (the admin's
// "admit n") it admits up to that many from the head regardless of capacity, rate and
// hold; they still count against the rate window.
var stepScript = redis.NewScript(prelude + `
local now, cap, sttl, qttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local channel, max_sweep, forced = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local rate_n, rate_per, seed, hold = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11] == '1'
local keep, smax = math.max(tonumber(ARGV[12]), qttl), tonumber(ARGV[13] or 0)

expire_idle(now - sttl)
if smax > 0 then end_sessions(redis.call('ZRANGEBYSCORE', since, '-inf', now - smax)) end
local base, epoch = epoch_of()
if not base or redis.call('ZCARD', queue) == 0 then return {0} end
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
-- held bits to clear, and the admitted ids' (now, id) pairs for active and since. A
-- pick clears its live bit at once, since the next pick counts or scans live.
local unheld, entered = {}, {}

local function take(t)
  local h = heard_at(t - base)
  if h <= cutoff then h = heard_with(h, redis.call('GETRANGE', holders, (t - base) * 2, (t - base) * 2 + 1)) end
  if h <= cutoff then
    silence(t, h)
    for b, low in pairs(away_low) do redis.call('ZADD', gone, 'LT', low, b) end
    away_low = {}
    return
  end
  local id = redis.call('ZRANGEBYSCORE', queue, t, t, 'LIMIT', 0, 1)[1]
  redis.call('SETBIT', live, t - base, 0)
  local n = #unheld
  unheld[n + 1], unheld[n + 2], unheld[n + 3], unheld[n + 4] = 'SET', 'u1', t - base, 0
  if not id then return end -- a bit without its waiter: cleared, not admitted
  admitted[#admitted + 1] = id
  n = #entered
  entered[n + 1], entered[n + 2] = now, id
  free = free - 1
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
local lane = tonumber(redis.call('HGET', meta, 'lane') or 0)
if seed > 0 and lane > 0 then
  -- The pass lane goes first in random mode too, in its order.
  while free > 0 and present > 0 do
    local off = redis.call('BITPOS', live, 1, 0, lane - 1, 'BIT')
    if off < 0 then break end
    take(base + off)
    present = present - 1
  end
end
if seed > 0 then
  -- Random mode: each admission is a uniform pick among those present; a silent one
  -- picked is sent away and the pick repeated, so the admitted one is uniform among
  -- the live waiters.
  math.randomseed(seed)
  while free > 0 and present > 0 do
    take(base + kth_present(math.random(present) - 1))
    present = present - 1
  end
else
  local from = 0
  while free > 0 do
    local off = redis.call('BITPOS', live, 1, from, -1, 'BIT')
    if off < 0 then break end
    take(base + off)
    from = off + 1
  end
end
if away_delta ~= 0 then redis.call('HINCRBY', meta, 'away', away_delta) end
if #unheld > 0 then in_chunks('BITFIELD', held, unheld) end
if #admitted > 0 then
  in_chunks('ZREM', queue, admitted)
  in_chunks('ZADD', active, entered)
  in_chunks('ZADD', since, entered)
  redis.call('HINCRBY', meta, 'admitted_total', #admitted)
  rate_record(now, rate_n, rate_per, #admitted)
  redis.call('PUBLISH', channel, table.concat(admitted))
end
if redis.call('ZCARD', queue) == 0 then
  redis.call('DEL', live, held, heard, buckets, gone, holders, quiet)
  redis.call('HSET', meta, 'away', 0)
end
table.insert(admitted, 1, dropped)
return admitted
`)

// shuffleScript: ARGV key, seed. The lottery of a scheduled event: the queued waiters,
// present and away, swap tickets (and their heard times, presence, quiet bits and holders with them) in a
// uniformly random permutation (Fisher-Yates), so the ticket set, the held bitmap and
// everyone who joins later stay as they are. It runs once per key (a field in meta),
// whoever calls it; it returns -1 when the key was drawn already, else the number of
// waiters shuffled. O(waiters), once per event.
var shuffleScript = redis.NewScript(prelude + `
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
`)

// resetScript empties the queue and the active set; the ticket counter and
// admitted_total carry on.
var resetScript = redis.NewScript(prelude + `
redis.call('DEL', queue, active, since, live, held, heard, buckets, gone, holders, quiet)
redis.call('HDEL', meta, 'base', 'epoch', 'away', 'lane', 'lane_next')
return 0
`)

// positionsScript returns {base, first byte, live bitmap from that byte}: everything
// Positions needs, in one command, whatever the number of tickets asked about.
var positionsScript = redis.NewScript(prelude + `
local base = tonumber(redis.call('HGET', meta, 'base'))
if not base or redis.call('ZCARD', queue) == 0 then return {0, 0, ''} end
local first = redis.call('BITPOS', live, 1)
if first < 0 then return {base, 0, ''} end
local from = math.floor(first / 8)
return {base, from, redis.call('GETRANGE', live, from, -1)}
`)

// statsScript returns {active, waiting (present), admitted total, away}.
var statsScript = redis.NewScript(prelude + `
local away = away_count()
return {redis.call('ZCARD', active), redis.call('ZCARD', queue) - away,
  tonumber(redis.call('HGET', meta, 'admitted_total') or 0), away}
`)

// swapOverridesScript: KEYS the overrides key; ARGV deadline (taken by the prelude),
// old, new. It replaces the runtime settings document with new ("" removes it) if
// it still is old ("" for none) and answers 1, else it changes nothing and answers
// 0: the compare-and-swap that makes a PATCH's read, merge and write atomic, so two
// operators changing different settings at once both keep their change. A script
// for the deadline prelude (a change the operator was told had failed must not land
// later) and for the compare, which a bare SET cannot make.
var swapOverridesScript = redis.NewScript(deadlineCheck + `
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
`)
