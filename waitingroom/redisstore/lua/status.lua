-- status.lua: where a visitor stands. Hears a waiter, and so brings an away one back.
--
-- KEYS[1..16]  the room's keys (prelude.lua)
-- KEYS[17]     the visitor's moved mark, waiting_room:{<room>}:moved:<hex id> (move.lua)
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      id: the visitor's id, 16 bytes
-- ARGV[2]      now: unix ms
-- ARGV[3]      socket: 1 when the waiting socket asks (queue.Store.Listen), else 0
--
-- Returns {state, ticket, position, returned, active, waiting}, as join.lua does for
-- each visitor (for an admitted one, ticket is its admission time, admitted_at); all
-- zeros (state 0, unknown) for a visitor the room does not know, and state 4 (moved)
-- with zeros for one whose place moved to another device. For the socket, a no-show
-- queued again and away is neither heard nor brought back: it is queued at position 0
-- with returned 3 (a socket alone is not coming back).

local id, now, socket = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
if redis.call('ZSCORE', active, id) then return {2, admitted_at(id), 0, 0, redis.call('ZCARD', active), present_count()} end
local t = redis.call('ZSCORE', queue, id)
if not t then
  -- A mark counts only if no reset came since it was made (reset.lua).
  local mark = redis.call('GET', KEYS[17])
  if mark and mark == (redis.call('HGET', meta, 'resets') or '0') then return {4, 0, 0, 0, 0, 0} end
  return {0, 0, 0, 0, 0, 0}
end
if socket then
  local base = epoch_of()
  local off = tonumber(t) - base
  if not_back(off) then
    return {1, tonumber(t), 0, 3, redis.call('ZCARD', active), present_count()}
  end
end
return queued_status(tonumber(t), now)
