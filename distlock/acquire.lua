-- acquire.lua takes every key of one lock, or none of them, in one atomic step.
--
-- KEYS hold the n lock keys, then their n fence counters:
--   KEYS[i]     the i-th lock key, whose value is the holder's owner token
--   KEYS[n + i] the fence counter of that key, which never expires
-- ARGV[1] is the new holder's owner token, ARGV[2] the lease in milliseconds.
--
-- Returns {1, fence_1, ..., fence_n} when every key was free and is now
-- taken, with one fencing token per key; or {0, i, pttl} when the i-th key
-- is held, pttl being what is left of its lease in milliseconds (-1: none).
-- Nothing is written unless every key is free: all or nothing.

local n = #KEYS / 2

for i = 1, n do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl ~= -2 then
    return {0, i, pttl}
  end
end

local reply = {1}
for i = 1, n do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
  reply[i + 1] = redis.call("INCR", KEYS[n + i])
end
return reply
