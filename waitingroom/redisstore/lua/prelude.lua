-- prelude.lua: the start of the scripts, not a script of its own. scripts.go puts its
-- first part (the deadline check, up to the line "-- The room's keys") before
-- once.lua and swap_overrides.lua, which touch no room's keys, and all of it before
-- every other script but time.lua. Redis numbers a script's lines from this file's
-- first line: an error's line N is this file's line N inside the part a script was
-- given, and past it the script's own line N minus that part's length, which the
-- store works out and adds to the error (luaScript.locate in scripts.go).
--
-- KEYS[1..16]  the room's keys, named by the room part (the scripts given only the
--              deadline check have their own)
-- ARGV[1]      deadline: the caller's deadline, unix ms by Redis's clock, 0 for none
--              (deadline.go). It is taken off ARGV before the script reads its own
--              arguments, so each script's header numbers its ARGV from 1 after it.
--
-- Returns nothing of its own: once the deadline has passed it ends the script with
-- the error reply "DEADLINE ..." (deadlineReply), before anything is written.

local DEADLINE = tonumber(table.remove(ARGV, 1))
if DEADLINE > 0 then
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > DEADLINE then
    return redis.error_reply('DEADLINE the caller gave up on this call')
  end
end

-- The room's keys: KEYS[1..16], in this order, the sixteen keys of scripts.go's
-- layout (newRoomStore lists them). The helpers below are shared by the scripts on
-- a room's keys.
local queue, active, meta, live, heard, buckets = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local rate, held, gone = KEYS[7], KEYS[8], KEYS[9]
local holders, leases, since, quiet = KEYS[10], KEYS[11], KEYS[12], KEYS[13]
local arrive, arrive_tickets, missed = KEYS[14], KEYS[15], KEYS[16]
local BUCKET = 256
-- A busy period's first PASS_LANE offsets are the pass lane (pass.go): its tickets are
-- below every ordinary one, so every bitmap count puts pass holders first.
local PASS_LANE = 16384
-- KNOWN is added to a join's returned number for an id known already (store.go,
-- replyKnown): nothing was joined or counted.
local KNOWN = 4

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

-- When admitted visitor id's session began (unix ms), as the status answers carry it
-- in the ticket's place (store.go, toStatus); 0 when since has no entry.
local function admitted_at(id)
  return tonumber(redis.call('ZSCORE', since, id) or 0)
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

-- Counts n admissions for reason (queue.Reason: 0 in order .. 5 random) in the
-- admissions of the hour of now (unix ms), key: a field a minute and reason,
-- "<minute of the hour>:<reason>" (draws.go, Admissions), kept a day and an hour.
local function count_reason(key, now, reason, n)
  if n <= 0 then return end
  redis.call('HINCRBY', key, math.floor(now / 60000) % 60 .. ':' .. reason, n)
  redis.call('EXPIRE', key, 90000)
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

-- Whether the waiter at offset off is a no-show queued again and away, which only a
-- page request brings back (queue.Store.Listen): the waiting socket's calls leave it.
local function not_back(off)
  return redis.call('GETBIT', missed, off) == 1 and redis.call('GETBIT', live, off) == 0
end

-- {state, ticket, position, returned, active, waiting} of a queued waiter, heard now;
-- returned is 2 for a no-show back.
local function queued_status(ticket, now)
  local base, epoch = epoch_of()
  local off, r = ticket - base, rel(now, epoch)
  hear(off, r)
  local returned = 0
  if revive(off, r) then
    returned = 1
    -- A no-show back (step.lua): its turn came while away, and it goes in first.
    -- The bit stays until it is let in, where step.lua marks its second turn.
    if redis.call('GETBIT', missed, off) == 1 then returned = 2 end
  end
  local position = redis.call('BITCOUNT', live, 0, off, 'BIT')
  return {1, ticket, position, returned, redis.call('ZCARD', active), present_count()}
end

-- ticket_guard(ticket) is the room's last ticket, skipped past the tickets a failover
-- may have lost (and written to meta when it skips): failover.go says why and what it
-- costs. TICKET_SKIP is 2^16; NODE_CHECK_EVERY is in ms.
local TICKET_SKIP, NODE_CHECK_EVERY, TICKETS_PER_MS = 65536, 100, 64
local function ticket_guard(ticket)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local seen = redis.call('HMGET', meta, 'node', 'node_at')
  if not seen[1] and ticket == 0 then
    ticket = now * TICKETS_PER_MS
    redis.call('HSET', meta, 'ticket', ticket)
  end
  local at = tonumber(seen[2] or 0)
  if seen[1] and now >= at and now - at < NODE_CHECK_EVERY then return ticket end
  local info = redis.pcall('INFO', 'replication') -- a table when an ACL denies it
  local node = type(info) == 'string' and string.match(info, 'master_replid:(%w+)') or ''
  if seen[1] and seen[1] ~= node then
    ticket = ticket + TICKET_SKIP
    redis.call('HSET', meta, 'ticket', ticket)
    -- The pass lane's counter is as far behind: its lost tickets cannot be skipped
    -- inside the lane, so the lane closes for the rest of this busy period.
    local lane = redis.call('HGET', meta, 'lane')
    if lane then redis.call('HSET', meta, 'lane_next', lane) end
  end
  redis.call('HSET', meta, 'node', node, 'node_at', now)
  return ticket
end
