-- fleet.lua: records that this instance is live and the format level it reads, and
-- reports the room's live instances and the lowest level among them. An instance of
-- this release or later is live while its record was renewed within the record's
-- window; one of a release from before the record is seen by its lease alone (hold.lua,
-- renewed while its hub holds waiters' sockets) within the lease's window, and reads
-- level 1. An instance that recorded and stopped (a restart) is gone, though its
-- lease outlives its record: its lapsed record is kept while that lease could be
-- fresh, so the lease is not taken for an older release's, and dropped after.
--
-- An instance that has no slot yet claims it here, its lease and its record written
-- together: claimed first on its own (hold.lua), its lease would stand without a
-- record until this script ran, and an instance starting beside it would take it, in
-- between, for an older release's.
--
-- KEYS[1]      the room's leases (instance slot -> last renewal, unix ms)
-- KEYS[2]      the room's fleet (instance slot -> "<level>:<last renewal, unix ms>")
-- KEYS[3]      the room's meta hash, whose "instances" counts the slots given out
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      now: unix ms
-- ARGV[2]      this instance's slot (0: give this instance one, as hold.lua does)
-- ARGV[3]      the format level it reads
-- ARGV[4]      the record's window: ms
-- ARGV[5]      the lease's window: ms
--
-- Returns {live instances, lowest level, this instance's slot}.

local now, slot, reads = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local recordSince, leaseSince = now - tonumber(ARGV[4]), now - tonumber(ARGV[5])
if slot == '0' then
  slot = tostring((redis.call('HINCRBY', KEYS[3], 'instances', 1) - 1) % 65535 + 1)
  redis.call('HSET', KEYS[1], slot, now)
end
redis.call('HSET', KEYS[2], slot, reads .. ':' .. now)
local n, lowest, recorded = 1, reads, {[slot] = true}
local records = redis.call('HGETALL', KEYS[2])
for i = 1, #records, 2 do
  local other, level, at = records[i], string.match(records[i + 1], '^(%d+):(%d+)$')
  if other ~= slot then
    if level and tonumber(at) > recordSince then
      n, recorded[other] = n + 1, true
      lowest = math.min(lowest, tonumber(level))
    elseif level and tonumber(at) > leaseSince then
      recorded[other] = true -- stopped: not live, and its lease no older release's
    else
      redis.call('HDEL', KEYS[2], other)
    end
  end
end
local leases = redis.call('HGETALL', KEYS[1])
for i = 1, #leases, 2 do
  if not recorded[leases[i]] and tonumber(leases[i + 1]) > leaseSince then
    n, lowest = n + 1, math.min(lowest, 1)
  end
end
return {n, lowest, tonumber(slot)}
