-- swap_overrides.lua: replaces the runtime settings document with new ("" removes it)
-- if it still is old, else changes nothing: the compare-and-swap that makes a PATCH's
-- read, merge and write atomic, so two operators changing different settings at once
-- both keep their change. A script for the compare, which a bare SET cannot make, and
-- for the deadline check (a change the operator was told had failed must not land
-- later), the only part of prelude.lua it is given.
--
-- KEYS[1]      the room's overrides key
-- ARGV, after the deadline (prelude.lua):
-- ARGV[1]      old: the document the change was made from ("" for none)
-- ARGV[2]      new: the document to store ("" removes it)
--
-- Returns 1 when new was stored (or old removed), 0 when the document was not old.

local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
