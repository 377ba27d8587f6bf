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
--
-- Each key is taken with SET NX PX, which takes a free key and leaves a held
-- one alone. When the i-th key turns out to be held, the keys this call took
-- before it are deleted again. A script runs with nothing else in between,
-- so nobody ever sees those keys taken: all or nothing. In the common case,
-- one free key, this is two commands: SET and INCR.

local n = #KEYS / 2

for i = 1, n do
  if not redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2]) then
    for j = 1, i - 1 do
      redis.call("DEL", KEYS[j])
    end
    return {0, i, redis.call("PTTL", KEYS[i])}
  end
end

local reply = {1}
for i = 1, n do
  reply[i + 1] = redis.call("INCR", KEYS[n + i])
end
return reply
