-- acquire.lua takes every key of one lock, or none of them, in one atomic step.
--
-- KEYS come in pairs, one pair per key the caller locks:
--   KEYS[i]     the lock key, whose value is the holder's owner token
--   KEYS[i + 1] the fence counter of that key, which never expires
-- ARGV[1] is the new holder's owner token, ARGV[2] the lease in milliseconds.
--
-- Returns {1, fence_1, fence_2, ...} when every key was free and is now
-- taken, with one fencing token per pair; or {0, n, pttl} when the n-th key
-- is held, pttl being what is left of its lease in milliseconds (-1: none).
-- Nothing is written unless every key is free: all or nothing.

for i = 1, #KEYS, 2 do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl ~= -2 then
    return {0, (i + 1) / 2, pttl}
  end
end

local reply = {1}
for i = 1, #KEYS, 2 do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
  reply[#reply + 1] = redis.call("INCR", KEYS[i + 1])
end
return reply
