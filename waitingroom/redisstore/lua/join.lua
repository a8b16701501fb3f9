-- join.lua: a batch of new visitors in one round trip. Each is decided exactly as if
-- it had come alone, one after the other, inside one atomic script.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      capacity: the most visitors admitted at once
-- ARGV[2]      session TTL, ms
-- ARGV[3]      rate count: admissions allowed per rate window (0: no rate)
-- ARGV[4]      rate window, ms (0: no rate)
-- ARGV[5]      hold: 1 admits nobody, every new visitor queues
-- KEYS[17]     the admissions of the hour of the batch's first arrival (count_reason
--              in prelude.lua)
-- ARGV[6]      no-queue: 1 turns away a new visitor who cannot be admitted at once
-- ARGV[7]      reasons: 1 counts each admission at join as in order (step.lua)
-- ARGV[8+2k]   the k-th visitor's id, 16 bytes
-- ARGV[9+2k]   the k-th visitor's arrival, unix ms
--
-- Returns six numbers per visitor, in order: {state, ticket, position, returned,
-- active, waiting}. state is 0 unknown, 1 queued, 2 admitted, 3 rejected (no-queue);
-- ticket and position are 0 unless queued, but for an admitted visitor ticket is its
-- admission time (admitted_at); returned is 1 for an away waiter heard
-- again, 2 for a no-show back (step.lua), plus KNOWN (4) for an id known already (nothing
-- joined: a keyed visitor on another device); active and waiting (present waiters) are
-- the room as that visitor found it.
--
-- A command called from Lua costs Redis about as much as the little work most of these
-- do, and Redis is the one thing a fleet shares, so a batch reads what it needs once
-- and writes its queued visitors together at the end: their tickets run on from one
-- another, so their live bits, heard times and queue entries are a few commands for the
-- whole batch. A queued visitor costs two lookups (is the id known already?) rather
-- than the eleven commands of a join of its own. Nothing else runs between the reads
-- and the writes (a script is atomic), and no decision in the batch reads what is still
-- to be written: a visitor admitted at join needs an empty queue, and the pending
-- waiters are counted in waiting.

local cap, sttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local rate_n, rate_per, hold, noqueue = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == '1', ARGV[6] == '1'
local reasons, admitted_at_join = ARGV[7] == '1', 0

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
  if again then return {again[1], again[2], again[3], KNOWN, active_count(), waiting} end
  if redis.call('ZSCORE', active, id) then return {2, admitted_at(id), 0, KNOWN, active_count(), waiting} end
  local t = redis.call('ZSCORE', queue, id)
  if t then
    -- Known and queued: its answer reads the room as it stands, the batch's pending
    -- waiters included.
    local st = queued_status(tonumber(t), now)
    if st[4] > 0 then waiting = waiting + 1 end
    st[4], st[5], st[6] = st[4] + KNOWN, active_count(), waiting
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
      admitted_at_join = admitted_at_join + 1
      return {2, now, 0, 0, nactive, 0}
    end
  end
  if noqueue then return {3, 0, 0, 0, active_count(), waiting} end

  ticket = ticket + 1
  if queued == 0 then
    base, epoch = ticket, now
    ticket = base + PASS_LANE
    redis.call('HSET', meta, 'base', base, 'epoch', epoch, 'away', 0, 'lane', PASS_LANE, 'lane_next', 0)
    redis.call('DEL', live, held, heard, buckets, gone, holders, quiet, missed)
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
for i = 8, #ARGV, 2 do
  local id = ARGV[i]
  local r = join(id, tonumber(ARGV[i + 1]))
  seen[id] = r
  local n = #out
  for k = 1, 6 do out[n + k] = r[k] end
end
flush()
-- A batch's arrivals are within a few milliseconds: counted in its first's minute.
if reasons and #ARGV >= 9 then count_reason(KEYS[17], tonumber(ARGV[9]), 0, admitted_at_join) end
return out
