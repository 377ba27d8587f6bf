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
-- one free key, this is three commands: SET, TIME and INCR.
--
-- A fencing token is the key's counter plus one, or the server's clock in
-- microseconds when the counter has fallen more than a second behind it,
-- and becomes the new counter. The counter makes tokens increase while
-- Redis keeps its data; the clock makes them increase across a restart
-- that lost the counter, or a failover to a replica that never saw it: a
-- token is never ahead of the clock at its issue, and one issued later
-- carries a later time (see "Fencing tokens" in doc.go). Allowing the
-- counter to lag the clock by a second keeps the common case to TIME and
-- INCR. A token set from the clock is written as a string of digits: Lua
-- would write a number this large in exponent form.

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
  local fence = redis.call("INCR", KEYS[n + i])
  if fence < now - 1000000 then
    fence = now
    redis.call("SET", KEYS[n + i], string.format("%.0f", fence))
  end
  reply[i + 1] = fence
end
return reply
