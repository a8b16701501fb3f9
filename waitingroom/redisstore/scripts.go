package redisstore

import "github.com/redis/go-redis/v9"

// A room lives in seven keys that share one hash tag, so every script touches a single
// Cluster slot:
//
//	queue          ZSET  visitor id -> ticket                 (the only per-waiter entry)
//	active         ZSET  visitor id -> last seen, unix ms
//	meta           HASH  ticket (counter), base, epoch, admitted_total
//	live           STRING bitmap, bit (ticket-base) set while that ticket is queued
//	heard          STRING 4 bytes per ticket: last heard, ms since epoch (big endian)
//	heard_buckets  ZSET  bucket (256 tickets) -> a lower bound of its waiters' heard
//	rate           ZSET  admission number -> admitted at, ms: the admissions inside the
//	                     rate window (at most the rate's count; empty without a rate)
//
// base and epoch restart whenever a ticket is issued into an empty queue, so live and
// heard only span the tickets of the current busy period.
//
// Why not a second ZSET of waiters by last-heard: a ZSET entry costs ~120 bytes, two
// would break the 200-byte budget per waiter. heard costs 4 bytes per ticket, and
// heard_buckets lets Step find silent waiters without scanning the queue: a bucket's
// score never exceeds the oldest heard time of its waiters (hearing only raises heard,
// joins lower the score with ZADD LT, a sweep sets it exactly), so every bucket that may
// hold a silent waiter scores at or below the cutoff.
//
// The prelude starts with deadlineCheck (deadline.go): every script's ARGV[1] is its
// caller's deadline, taken off before the script reads its own arguments.
const prelude = deadlineCheck + `
local queue, active, meta, live, heard, buckets = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local rate = KEYS[7]
local BUCKET = 256

-- How many more admissions the rate allows at now (-1: no rate limit). It forgets the
-- admissions that left the window: a sliding window, exact at any instant.
local function rate_budget(now, n, per)
  if n <= 0 or per <= 0 then return -1 end
  redis.call('ZREMRANGEBYSCORE', rate, '-inf', now - per)
  return math.max(n - redis.call('ZCARD', rate), 0)
end

-- Records the last k admissions (admitted_total already counts them) in the window.
local function rate_record(now, n, per, k)
  if n <= 0 or per <= 0 or k <= 0 then return end
  local total = tonumber(redis.call('HGET', meta, 'admitted_total'))
  for i = 0, k - 1 do redis.call('ZADD', rate, now, total - i) end
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
  if heard_at(off) < r then
    redis.call('SETRANGE', heard, off * 4, struct.pack('>I4', r))
  end
end

local function unqueue(id, ticket, base)
  redis.call('ZREM', queue, id)
  redis.call('SETBIT', live, ticket - base, 0)
end

local function queued_status(ticket, now)
  local base, epoch = epoch_of()
  hear(ticket - base, rel(now, epoch))
  return {1, ticket, redis.call('ZCOUNT', queue, '-inf', ticket)}
end
`

// joinScript takes a batch of new visitors in one round trip. ARGV: capacity, session
// TTL (ms), rate count, rate window (ms), hold, no-queue, then (id, now) pairs. Returns
// {state, ticket, position} per visitor, in order: each is decided exactly as if it had
// come alone, one after the other, inside one atomic script.
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

local waiting = redis.call('ZCARD', queue) -- the pending waiters included
local swept, nactive = nil, nil            -- active swept up to swept - sttl; its size, once read
local latest = nil                         -- the latest arrival of a visitor not known before
local ticket, base, epoch = nil, nil, nil  -- the last ticket issued, and the queue's base and epoch
local seen = {}                            -- id -> its answer, should a batch repeat one

-- What flush writes for the batch's waiters, gathered as they join: live bits to set
-- (BITFIELD operations), heard times from offset first on, queue entries, and each
-- bucket's lowest heard time.
local first, bits, times, entries, lowest = nil, {}, {}, {}, {}

local function sweep_active(now)
  if swept and now <= swept then return end
  local gone = redis.call('ZREMRANGEBYSCORE', active, '-inf', now - sttl)
  if nactive then nactive = nactive - gone end
  swept = now
end

local function join(id, now)
  if seen[id] then return seen[id] end
  if redis.call('ZSCORE', active, id) then return {2, 0, 0} end
  local t = redis.call('ZSCORE', queue, id)
  if t then return queued_status(tonumber(t), now) end

  -- Every new arrival expires the lapsed sessions; only an admission needs that done
  -- before it decides, the rest is done once, for the latest, at the end.
  if not latest or now > latest then latest = now end
  if waiting == 0 and not hold then
    sweep_active(now)
    nactive = nactive or redis.call('ZCARD', active)
    if nactive < cap and rate_budget(now, rate_n, rate_per) ~= 0 then
      redis.call('ZADD', active, now, id)
      nactive = nactive + 1
      redis.call('HINCRBY', meta, 'admitted_total', 1)
      rate_record(now, rate_n, rate_per, 1)
      return {2, 0, 0}
    end
  end
  if noqueue then return {3, 0, 0} end

  if not ticket then
    local v = redis.call('HMGET', meta, 'ticket', 'base', 'epoch')
    ticket, base, epoch = tonumber(v[1] or 0), tonumber(v[2]), tonumber(v[3])
  end
  ticket = ticket + 1
  if waiting == 0 then
    base, epoch = ticket, now
    redis.call('HSET', meta, 'base', base, 'epoch', epoch)
    redis.call('DEL', live, heard, buckets)
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
  waiting = waiting + 1
  return {1, ticket, waiting}
end

-- Writes the batch's waiters: their live bits, heard times and queue entries, each
-- kind in one command (their tickets, so their offsets, run on from one another), and
-- each bucket's score lowered to its lowest heard time.
local function flush()
  if latest then sweep_active(latest) end
  if not first then return end
  redis.call('HSET', meta, 'ticket', ticket)
  redis.call('BITFIELD', live, unpack(bits))
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
  out[n + 1], out[n + 2], out[n + 3] = r[1], r[2], r[3]
end
flush()
return out
`)

// statusScript: ARGV id, now. Returns {state, ticket, position}; hears a waiter.
var statusScript = redis.NewScript(prelude + `
local id, now = ARGV[1], tonumber(ARGV[2])
if redis.call('ZSCORE', active, id) then return {2, 0, 0} end
local t = redis.call('ZSCORE', queue, id)
if not t then return {0, 0, 0} end
return queued_status(tonumber(t), now)
`)

// touchScript: ARGV id, now. Returns 1 when the visitor holds a slot.
var touchScript = redis.NewScript(prelude + `
if not redis.call('ZSCORE', active, ARGV[1]) then return 0 end
redis.call('ZADD', active, 'XX', 'GT', ARGV[2], ARGV[1])
return 1
`)

// heartbeatScript: ARGV now, id... Hears every id that is queued.
var heartbeatScript = redis.NewScript(prelude + `
local base, epoch = epoch_of()
if not base then return 0 end
local r = rel(tonumber(ARGV[1]), epoch)
for i = 2, #ARGV do
  local t = redis.call('ZSCORE', queue, ARGV[i])
  if t then hear(tonumber(t) - base, r) end
end
return 0
`)

// leaveScript: ARGV id. Returns 1 when the visitor was admitted or queued.
var leaveScript = redis.NewScript(prelude + `
if redis.call('ZREM', active, ARGV[1]) == 1 then return 1 end
local t = redis.call('ZSCORE', queue, ARGV[1])
if not t then return 0 end
local base = epoch_of()
unqueue(ARGV[1], tonumber(t), base)
return 1
`)

// stepScript: ARGV now, capacity, session TTL, queue TTL (ms), channel, buckets to
// sweep at most, forced admissions, rate count, rate window (ms), random seed (0: from
// the head), hold (1: admit nobody). Returns {waiters dropped for silence, admitted ids
// in admission order...} and publishes the ids. With forced > 0 (the admin's "admit n")
// it admits up to that many from the head regardless of capacity, rate and hold; they
// still count against the rate window.
var stepScript = redis.NewScript(prelude + `
local now, cap, sttl, qttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local channel, max_sweep, forced = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local rate_n, rate_per, seed, hold = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11] == '1'

redis.call('ZREMRANGEBYSCORE', active, '-inf', now - sttl)
local base, epoch = epoch_of()
if not base or redis.call('ZCARD', queue) == 0 then return {0} end
local dropped = 0
local cutoff = now - qttl - epoch -- a waiter last heard at or before cutoff is gone

local function sweep(b)
  local first = b * BUCKET
  local bits = redis.call('GETRANGE', live, first / 8, (first + BUCKET) / 8 - 1)
  local hs = redis.call('GETRANGE', heard, first * 4, (first + BUCKET) * 4 - 1)
  local oldest
  for byte_i = 1, #bits do
    local byte = string.byte(bits, byte_i)
    if byte ~= 0 then
      for j = 0, 7 do
        if bit.band(byte, bit.rshift(128, j)) ~= 0 then
          local i = (byte_i - 1) * 8 + j
          local h = 0
          if #hs >= i * 4 + 4 then h = struct.unpack('>I4', hs, i * 4 + 1) end
          if h <= cutoff then
            local t = base + first + i
            local ids = redis.call('ZRANGEBYSCORE', queue, t, t, 'LIMIT', 0, 1)
            if ids[1] then redis.call('ZREM', queue, ids[1]) end
            redis.call('SETBIT', live, first + i, 0)
            dropped = dropped + 1
          elseif not oldest or h < oldest then
            oldest = h
          end
        end
      end
    end
  end
  if oldest then
    redis.call('ZADD', buckets, oldest, b)
  else
    redis.call('ZREM', buckets, b)
  end
end

if cutoff >= 0 then
  local due = redis.call('ZRANGEBYSCORE', buckets, '-inf', cutoff, 'LIMIT', 0, max_sweep)
  for _, b in ipairs(due) do sweep(tonumber(b)) end
end

-- The sweep may have stopped at max_sweep buckets, so the head is checked again: a
-- silent waiter is dropped, never admitted.
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

local function take(id, t)
  unqueue(id, t, base)
  if heard_at(t - base) > cutoff then
    redis.call('ZADD', active, now, id)
    admitted[#admitted + 1] = id
    free = free - 1
  else
    dropped = dropped + 1
  end
end

if seed > 0 then
  -- Random mode: each admission is a uniform pick among those still queued; a silent
  -- one picked is dropped and the pick repeated, so the admitted one is uniform among
  -- the live waiters.
  math.randomseed(seed)
  while free > 0 do
    local n = redis.call('ZCARD', queue)
    if n == 0 then break end
    local k = math.random(n) - 1
    local pick = redis.call('ZRANGE', queue, k, k, 'WITHSCORES')
    take(pick[1], tonumber(pick[2]))
  end
else
  while free > 0 do
    local head = redis.call('ZRANGE', queue, 0, free - 1, 'WITHSCORES')
    if #head == 0 then break end
    for i = 1, #head, 2 do take(head[i], tonumber(head[i + 1])) end
  end
end
if #admitted > 0 then
  redis.call('HINCRBY', meta, 'admitted_total', #admitted)
  rate_record(now, rate_n, rate_per, #admitted)
  redis.call('PUBLISH', channel, table.concat(admitted))
end
if redis.call('ZCARD', queue) == 0 then redis.call('DEL', live, heard, buckets) end
table.insert(admitted, 1, dropped)
return admitted
`)

// shuffleScript: ARGV key, seed. The lottery of a scheduled event: the queued waiters
// swap tickets (and their heard times with them) in a uniformly random permutation
// (Fisher-Yates), so the ticket set, the live bitmap and everyone who joins later stay
// as they are. It runs once per key (a field in meta), whoever calls it; it returns -1
// when the key was drawn already, else the number of waiters shuffled. O(waiters), once
// per event.
var shuffleScript = redis.NewScript(prelude + `
if redis.call('HSETNX', meta, 'shuffled:' .. ARGV[1], 1) == 0 then return -1 end
local base = epoch_of()
if not base then return 0 end
local q = redis.call('ZRANGE', queue, 0, -1, 'WITHSCORES')
local n = #q / 2
if n < 2 then return n end
local ids, tickets, hs = {}, {}, {}
for i = 1, n do
  ids[i], tickets[i] = q[2 * i - 1], tonumber(q[2 * i])
  hs[i] = heard_at(tickets[i] - base)
end
math.randomseed(tonumber(ARGV[2]))
for i = n, 2, -1 do
  local j = math.random(i)
  ids[i], ids[j] = ids[j], ids[i]
  hs[i], hs[j] = hs[j], hs[i]
end
-- Bucket scores are lower bounds of their waiters' heard times; waiters moved between
-- buckets, so they are recomputed exactly.
redis.call('DEL', buckets)
local mins = {}
for i = 1, n do
  local off = tickets[i] - base
  redis.call('ZADD', queue, tickets[i], ids[i])
  redis.call('SETRANGE', heard, off * 4, struct.pack('>I4', hs[i]))
  local b = math.floor(off / BUCKET)
  if not mins[b] or hs[i] < mins[b] then mins[b] = hs[i] end
end
for b, h in pairs(mins) do redis.call('ZADD', buckets, h, b) end
return n
`)

// resetScript empties the queue and the active set; the ticket counter and
// admitted_total carry on.
var resetScript = redis.NewScript(prelude + `
redis.call('DEL', queue, active, live, heard, buckets)
redis.call('HDEL', meta, 'base', 'epoch')
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

// statsScript returns {active, waiting, admitted total}.
var statsScript = redis.NewScript(prelude + `
return {redis.call('ZCARD', active), redis.call('ZCARD', queue),
  tonumber(redis.call('HGET', meta, 'admitted_total') or 0)}
`)
