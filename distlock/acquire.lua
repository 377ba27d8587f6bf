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
-- one free key, this is four commands: SET, TIME, GET and SET.
--
-- A fencing token is the larger of the key's counter plus one and the
-- server's clock in microseconds, and becomes the new counter. The counter
-- alone makes tokens increase while Redis keeps its data; the clock makes
-- them increase across a restart that lost the counter, or a failover to a
-- replica that never saw it: a token issued later carries a later time
-- (see "Fencing tokens" in doc.go). The token is written as a string of
-- digits: Lua would write a number this large in exponent form.

local n = #KEYS / 2

for i = 1, n do
  if not redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2]) then
    for j = 1, i - 1 do
      redis.call("DEL", KEYS[j])
    end
    return {0, i, redis.call("PTTL", KEYS[i])}
  end
end

local now = redis.call("TIME")
now = tonumber(now[1]) * 1000000 + tonumber(now[2])
local reply = {1}
for i = 1, n do
  local fence = math.max(tonumber(redis.call("GET", KEYS[n + i]) or "0") + 1, now)
  redis.call("SET", KEYS[n + i], string.format("%.0f", fence))
  reply[i + 1] = fence
end
return reply
